"""Facts no save records: a runner gone (its heartbeat older than RUNLEDGER_RUNNER_GONE_S) and
a projection stuck (an event it cannot apply). A sender's process looks for them now and then
and records each once: the delivery's id is the fact's (the runner and its last heartbeat; the
view and its position), so a second look, from this process or another, collides and adds
nothing. Recorded, it is sent like any other, at least once."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from eventsourcing.persistence import IntegrityError

from runledger.application.services.fleet import Fleet
from runledger.application.services.webhooks_outbox import Fact, Outbox, stamp
from runledger.projections.errors import ProjectionStuck, Stuck


def gone_runner(runner: Any) -> Fact:
    seen = runner.last_beat or runner.started_at
    body = {
        "runner_id": str(runner.runner_id),
        "worker": runner.worker,
        "host": runner.host,
        "pid": runner.pid,
        "last_beat": stamp(runner.last_beat),
    }
    return ("runner.gone", f"{runner.runner_id}|{stamp(seen)}", body)


def stuck_view(stuck: Stuck) -> Fact:
    body = {
        "view": stuck.view,
        "position": stuck.position,
        "topic": stuck.topic,
        "originator_id": stuck.originator_id,
        "version": stuck.version,
        "reason": stuck.reason,
    }
    return ("projection.stuck", f"{stuck.view}|{stuck.position}", body)


class Watcher:
    def __init__(
        self,
        *,
        outbox: Outbox,
        fleet: Fleet,
        fresh: Callable[[], object],
        clock: Callable[[], datetime],
    ) -> None:
        self.outbox = outbox
        self.fleet = fleet
        self.fresh = fresh
        """The read hook: on PostgreSQL only the store's projector applies events."""
        self.clock = clock
        self.recorded: set[tuple[str, str]] = set()
        """Facts this process has recorded or found recorded: not tried again."""

    def facts(self) -> list[Fact]:
        stuck = self.stuck()
        return [*map(stuck_view, stuck), *map(gone_runner, [] if stuck else self.gone())]

    def gone(self) -> list[Any]:
        # Read only while no view is stuck: the runners' read catches every view up first.
        return [r for r in self.fleet.listing(self.clock()) if r.state == "gone"]

    def stuck(self) -> list[Stuck]:
        try:
            self.fresh()
        except ProjectionStuck as error:
            return list(error.stuck)
        return []

    def look(self) -> int:
        """Record what is new; answers how many deliveries it queued."""
        facts = [f for f in self.facts() if (f[0], f[1]) not in self.recorded]
        if not facts:
            return 0
        subscriptions = self.outbox.subscriptions()
        queued = 0
        for fact in facts:
            self.recorded.add((fact[0], fact[1]))
            for delivery in self.outbox.queue(fact, subscriptions):
                with contextlib.suppress(IntegrityError):  # recorded by an earlier look
                    self.outbox.app.save(delivery)
                    queued += 1
        return queued

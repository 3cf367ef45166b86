"""The outbox: a save that records a fact someone is to be told of carries, in the same
transaction, one Delivery per subscription that wants it. The fact and its deliveries are
written together or not at all, so each is sent at least once whatever process dies after.

One place sees every save (``install``), rather than each service that may abort a run or judge
an entry: a fact recorded by a path written later is told of too. A save holding no fact costs a
look at its pending events' classes; one holding a fact reads the subscriptions aggregate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate

from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.delivery import Delivery
from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.domain.subscription import SUBSCRIPTIONS_ID, Subscription, Subscriptions

Fact = tuple[str, str, dict[str, Any]]
"""A fact as the outbox queues it: its name, its key in the store, the body receivers get."""


def stamp(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def needs_person(event: object) -> bool:
    """An entry event after which only a person can move the entry on: a drift, a terminal
    failure, or a failure with no attempt left (no next attempt)."""
    if isinstance(event, Resource.Drifted):
        return True
    return isinstance(event, Resource.RevertFailed) and (
        event.mode == "terminal" or event.next_attempt_at is None
    )


def facts_of(objs: Iterable[Any]) -> list[Fact]:
    """The facts in a save's pending events: a run aborted; a run with entries that came to
    need a person, one fact per run however many entries."""
    found: list[Fact] = []
    stuck: dict[str, list[dict[str, Any]]] = {}
    for obj in objs:
        for event in obj.pending_events if isinstance(obj, Aggregate) else ():
            if isinstance(event, Run.Aborted):
                found.append(_aborted(obj, event))
            elif needs_person(event):
                stuck.setdefault(str(obj.run_id), []).append(_entry(obj, event))
    for run_id, entries in stuck.items():
        first = entries[0]
        key = f"{first['entry_id']}|{first['version']}"
        body = {"run_id": run_id, "entries": entries, "at": first["at"]}
        found.append(("run.needs_person", key, body))
    return found


def _aborted(run: Any, event: Run.Aborted) -> Fact:
    body = {
        "run_id": str(run.id),
        "name": run.name,
        "reason": event.reason,
        "by": event.by,
        "at": stamp(event.at),
    }
    return ("run.aborted", f"{run.id}|{event.originator_version}", body)


def _entry(entry: Any, event: Any) -> dict[str, Any]:
    return {
        "entry_id": str(entry.id),
        "version": event.originator_version,
        "kind": entry.kind,
        "ref": entry.ref,
        "state": entry.fate.state,
        "error": event.error,
        "at": stamp(event.at),
    }


class Outbox:
    def __init__(self, *, app: LedgerApp, clock: Callable[[], datetime]) -> None:
        self.app = app
        self.clock = clock

    def subscriptions(self) -> list[Subscription]:
        try:
            found: Subscriptions = self.app.repository.get(SUBSCRIPTIONS_ID)
        except AggregateNotFoundError:
            return []
        return list(found.items.values())

    def queue(self, fact: Fact, subscriptions: list[Subscription]) -> list[Delivery]:
        name, key, body = fact
        now = self.clock()
        full = {"event": name, **body}
        return [
            Delivery.queue(s.subscription_id, name, key, full, now)
            for s in subscriptions
            if s.wants(name)
        ]

    def deliveries(self, objs: tuple[Any, ...]) -> list[Delivery]:
        facts = facts_of(objs)
        if not facts:
            return []
        subscriptions = self.subscriptions()
        return [d for fact in facts for d in self.queue(fact, subscriptions)]


def install(app: LedgerApp, outbox: Outbox) -> None:
    """Every save of ``app`` carries the deliveries of the facts it records."""
    plain = app.save

    def save(*objs: Any, **kwargs: Any) -> Any:
        return plain(*objs, *outbox.deliveries(objs), **kwargs)

    app.save = save  # type: ignore[method-assign]

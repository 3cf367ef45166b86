"""Judging one call's verdict on its group in one worker's name, and judging it again on fresh
state when another writer moved an entry while the call was out."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.modules.answers import Verdict
from runledger.application.services.sweep.groups import Group
from runledger.application.services.sweep.verdicts import Judged, Summary, judge_group
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.resource import Resource

log = logging.getLogger("runledger.cleanup")


class Judge:
    """Applies a call's verdict to the group it covered, in memory or, after a lost race, to
    what this worker still holds, saved alone."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        settings: Settings,
        clock: Callable[[], datetime],
        worker: str,
    ) -> None:
        self.app = app
        self.streams = streams
        self.settings = settings
        self.clock = clock
        self.worker = worker

    def judge(self, run_id: UUID, group: Group, verdict: Verdict) -> Judged:
        return judge_group(
            run_id,
            group,
            verdict,
            self.worker,
            self.clock(),
            self.settings.backoff,
            self.settings.max_revert_attempts,
        )

    def settle_apart(self, run_id: UUID, judged: Judged, summary: Summary) -> None:
        """Something else changed an entry while the call was out (an expiry, a reconcile, a
        worker that took over an expired claim): judge on fresh state only what this worker
        still holds, and save it alone."""
        fresh = self.streams.load(Resource, list(judged.group.claimed))
        # Settled by another writer while the call was out: no longer remaining either.
        summary.remaining -= sum(1 for e in fresh.values() if not e.unresolved)
        mine = {
            i: e
            for i, e in fresh.items()
            if e.claim_worker == self.worker and e.attempts == judged.group.claimed[i].attempts
        }
        if not mine:
            return
        again = self.judge(run_id, Group(judged.group.rows, mine), judged.verdict)
        try:
            self.app.save(*mine.values(), again.line)
        except IntegrityError:
            log.warning("run %s: a verdict lost a race and will be retried", run_id)
            return
        summary.add(again.counts)

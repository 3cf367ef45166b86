from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from runledger.application.errors import Conflict
from runledger.application.services.holds import Holds
from runledger.application.services.inputs import person
from runledger.application.services.ledger import Ledger, save_with_retry
from runledger.application.services.pass_maker import PassMaker
from runledger.application.services.running.division import Share, everything
from runledger.application.services.serving import ServedElsewhere, served_nowhere
from runledger.application.services.sweep.give_back import GiveBack
from runledger.application.services.sweep.groups import Group
from runledger.application.services.sweep.lanes import in_lanes
from runledger.application.services.sweep.pacing import Halt
from runledger.application.services.sweep.passes import Work
from runledger.application.services.sweep.verdicts import Retried, Summary
from runledger.application.services.sweep_call import SweepCall
from runledger.application.services.troubled_runs import TroubledRuns
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.resource import Resource
from runledger.domain.run import TERMINAL
from runledger.domain.runlog import LogEntry
from runledger.projections.queries import Queries
from runledger.projections.rows import EntryRow, RunRow


class Cleanup:
    """Gives back what terminal runs took: the sweep, one run's pass, and a person's retry.

    A pass is durable per call (sweep_pass.Pass): a worker killed mid-pass leaves its successor
    at most the call that was in flight, and attempts count only calls made.
    """

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        queries: Queries,
        ledger: Ledger,
        give_back: GiveBack,
        holds: Holds,
        settings: Settings,
        clock: Callable[[], datetime],
        serving: Callable[[], ServedElsewhere] = served_nowhere,
        share: Callable[[], Share] = everything,
    ) -> None:
        self.app = app
        self.streams = streams
        self.queries = queries
        self.ledger = ledger
        self.give_back = give_back
        self.holds = holds
        self.settings = settings
        self.clock = clock
        self.serving = serving
        self.share = share
        self._passes = PassMaker(
            app=app, streams=streams, give_back=give_back, settings=settings, clock=clock
        )
        self._troubled = TroubledRuns()
        self.lanes = settings.cleanup_lanes or (2 if queries.backend.row_locks else 1)
        """Lanes a pass's runs are divided between (lanes.py): by default two where a write
        locks only its rows (PostgreSQL), one where it locks the store (SQLite)."""

    def sweep(self, worker: str, stop: Halt | None = None) -> dict[UUID, Summary]:
        """One bounded pass over the runs that owe the world something."""
        return self.sweep_more(worker, stop)[0]

    def sweep_more(
        self, worker: str, stop: Halt | None = None, share: Share | None = None
    ) -> tuple[dict[UUID, Summary], bool]:
        """A pass, and whether it may have left work a next pass would find: it found a whole
        batch of runs, or a run with more than it may work. ``share``: this process's runners'
        part of the runs, read once for a leg of passes (read for this pass if not given)."""
        elsewhere = self.serving()
        now = self.clock()
        batch = self.settings.cleanup_run_batch
        max_attempts = self.settings.max_revert_attempts
        share = share if share is not None else self.share()
        # Every run's work is read before the pass writes, after one catch-up: a catch-up
        # after a run's verdicts would be a write transaction of its own, and one before each
        # read would only ask the store again whether anything new had come.
        with self.queries.one_catch_up():
            limit = (batch + len(self._troubled)) * share.parts
            found = share.of(self.queries.candidate_runs(now, max_attempts, limit))
            # A run whose pass just raised waits its turn behind the others (TroubledRuns);
            # the rest are shuffled, so that several workers start at different runs; runners
            # that share the store each take their share of the runs (division.py).
            candidates = self._troubled.pass_over(found)[:batch]
            random.shuffle(candidates)
            rows = {r.run_id: r for r in self.queries.runs(candidates, now, max_attempts)}
            pages = self._pages(list(rows.values()), now)
        call = SweepCall(
            passes=self._passes,
            troubled=self._troubled,
            worker=worker,
            stop=stop,
            elsewhere=elsewhere,
            rows=rows,
            pages=pages,
        )
        swept: dict[UUID, Summary] = {}
        left_over = False
        for done, more in in_lanes(call.lane, candidates, self.lanes):
            swept |= done
            left_over = left_over or more
        return swept, len(candidates) >= batch or left_over

    def manual_cleanup(self, run_id: UUID, by: str) -> Retried:
        """A person asks again: reset the run's counters, log it, and work the run now. A lease
        entry whose target another live run now holds is left as it is, and the answer says why:
        restoring it would undo that run's override."""
        person(by, "a manual cleanup")
        run = self.ledger.get_run(run_id)
        if not run.is_terminal:
            raise Conflict(f"run {run_id} is still running; its ledger is still growing")
        now = self.clock()
        rows = self.queries.unresolved_entries(run_id)
        held = {h.entry_id: h for h in self.holds.among(run_id, rows)}
        ids = [e.entry_id for e in rows if e.entry_id not in held]

        def reset() -> list[Any]:
            entries = self.streams.load(Resource, ids).values()
            chosen = [e for e in entries if e.unresolved and not e.under_live_claim(now)]
            for entry in chosen:
                entry.reset_attempts(by, now)
            detail: dict[str, Any] = {"by": by, "resources": len(chosen)}
            if held:
                detail["held"] = len(held)
            line = LogEntry(
                key=f"retry|{run_id}|{uuid4()}",
                run_id=run_id,
                kind="cleanup.retry",
                detail=detail,
                at=now,
            )
            return [*chosen, line]

        def leave(group: Group) -> bool:
            # Asked again right before the pass: a run may have taken a target since the reset.
            again = self.holds.among(run_id, [r for r in group.rows if r.entry_id not in held])
            held.update((h.entry_id, h) for h in again)
            return any(r.entry_id in held for r in group.rows)

        save_with_retry(self.app, reset)
        summary = self.work_now(run_id, by, leave)
        return Retried(**vars(summary), held=list(held.values()))

    def work_now(self, run_id: UUID, by: str, leave: Callable[[Group], bool]) -> Summary:
        """A person's pass over one ended run, now, in their name; a group ``leave`` answers
        true for is not worked."""
        return self.clean_run(run_id, worker=f"{by} (manual)", by=by, leave=leave)

    def clean_run(
        self,
        run_id: UUID,
        *,
        worker: str,
        by: str,
        stop: Halt | None = None,
        leave: Callable[[Group], bool] | None = None,
    ) -> Summary:
        """Work one run's retryable entries once, a bounded number of groups, one call at a
        time; answers what was recorded. A group ``leave`` answers true for is not worked, nor
        one a live runner elsewhere serves (read for this call alone)."""
        now = self.clock()
        run = self.queries.run(run_id, now, self.settings.max_revert_attempts)
        found: Work | None = None
        if run is not None:
            found = (run, [EntryRow.of(e) for e in self._pages([run], now)[run_id]])
        one = self._passes.make(worker, self.serving(), leave)
        summary = one.clean(run_id, found, by, stop)
        one.land()
        return summary

    def _pages(self, runs: list[RunRow], now: datetime) -> dict[UUID, list[Any]]:
        """Each run's page of entries a pass may work, in one read, as rows for EntryRow.of:
        a running run's overdue leases only, everything retryable of an ended one."""
        max_attempts = self.settings.max_revert_attempts
        pages = [(run.run_id, run.status not in TERMINAL) for run in runs]
        return self.queries.retryable_pages(pages, now, max_attempts)

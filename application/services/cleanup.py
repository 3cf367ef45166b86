from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID, uuid4

from eventsourcing.persistence import IntegrityError

from runledger.application.errors import OUTAGES, Conflict
from runledger.application.modules.answers import Verdict
from runledger.application.services.from_rows import entry_from_row
from runledger.application.services.give_back import GiveBack
from runledger.application.services.groups import Group, group_entries
from runledger.application.services.inputs import person
from runledger.application.services.ledger import Ledger, save_with_retry
from runledger.application.services.pacing import Halt
from runledger.application.services.serving import (
    ServedElsewhere,
    nowhere,
    served_nowhere,
)
from runledger.application.services.verdicts import Judged, Summary, judge_group, swept_line
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.resource import Resource
from runledger.domain.run import TERMINAL
from runledger.domain.runlog import LogEntry
from runledger.projections.queries import Queries
from runledger.projections.rows import EntryRow, RunRow

log = logging.getLogger("runledger.cleanup")
TROUBLE_SWEEPS = 5

T = TypeVar("T")
Work = tuple[RunRow, list[EntryRow]]
"""A run as a pass finds it: its row, and the page of its entries the pass may work."""


class Cleanup:
    """Gives back what terminal runs took: the sweep, one run's pass, and a person's retry.

    A pass is durable per call: a group is claimed right before its call and its verdict saved
    right after, in the same save as the next group's claim, so a worker killed mid-pass leaves
    its successor at most the call that was in flight, and attempts count only calls made.
    """

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        queries: Queries,
        ledger: Ledger,
        give_back: GiveBack,
        settings: Settings,
        clock: Callable[[], datetime],
        serving: Callable[[], ServedElsewhere] = served_nowhere,
    ) -> None:
        self.app = app
        self.streams = streams
        self.queries = queries
        self.ledger = ledger
        self.give_back = give_back
        self.settings = settings
        self.clock = clock
        self.serving = serving
        self.elsewhere: ServedElsewhere = nowhere
        self._troubled: dict[UUID, int] = {}

    def sweep(self, worker: str, stop: Halt | None = None) -> dict[UUID, Summary]:
        """One bounded pass over the runs that owe the world something."""
        self.elsewhere = self.serving()
        now = self.clock()
        batch = self.settings.cleanup_run_batch
        # Every run's work is read before the pass writes, after one catch-up: a catch-up
        # after a run's verdicts would be a write transaction of its own, and one before each
        # read would only ask the store again whether anything new had come.
        with self.queries.one_catch_up():
            found = self.queries.candidate_runs(
                now, self.settings.max_revert_attempts, batch + len(self._troubled)
            )
            # A run whose pass just raised waits its turn behind the others, or it would hold
            # a slot of every sweep for ever; several workers start at different runs.
            candidates = [r for r in found if r not in self._troubled][:batch]
            random.shuffle(candidates)
            self._troubled = {r: n - 1 for r, n in self._troubled.items() if n > 1}
            max_attempts = self.settings.max_revert_attempts
            rows = {r.run_id: r for r in self.queries.runs(candidates, now, max_attempts)}
            work = self._each(candidates, lambda r: self._work(rows.get(r), now), stop)
        return self._each(
            list(work),
            lambda r: self._clean(r, work[r], worker=worker, by=worker, stop=stop),
            stop,
        )

    def _each(
        self, run_ids: list[UUID], do: Callable[[UUID], T], stop: Halt | None
    ) -> dict[UUID, T]:
        done: dict[UUID, T] = {}
        for run_id in run_ids:
            if stop is not None and stop.is_set():
                break
            try:
                done[run_id] = do(run_id)
            except OUTAGES:
                raise  # the store's trouble, not this run's: the runner says so once
            except Exception:  # one run's bad night must not stall the others
                log.exception("cleanup of run %s failed; the sweep goes on", run_id)
                self._troubled[run_id] = TROUBLE_SWEEPS
        return done

    def manual_cleanup(self, run_id: UUID, by: str) -> Summary:
        """A person asks again: reset the run's counters, log it, and work the run now."""
        person(by, "a manual cleanup")
        run = self.ledger.get_run(run_id)
        if not run.is_terminal:
            raise Conflict(f"run {run_id} is still running; its ledger is still growing")
        now = self.clock()
        ids = [e.entry_id for e in self.queries.unresolved_entries(run_id)]

        def reset() -> list[Any]:
            entries = self.streams.load(Resource, ids).values()
            chosen = [e for e in entries if e.unresolved and not e.under_live_claim(now)]
            for entry in chosen:
                entry.reset_attempts(by, now)
            line = LogEntry(
                key=f"retry|{run_id}|{uuid4()}",
                run_id=run_id,
                kind="cleanup.retry",
                detail={"by": by, "resources": len(chosen)},
                at=now,
            )
            return [*chosen, line]

        save_with_retry(self.app, reset)
        self.elsewhere = self.serving()
        return self.clean_run(run_id, worker=f"{by} (manual)", by=by)

    def clean_run(self, run_id: UUID, *, worker: str, by: str, stop: Halt | None = None) -> Summary:
        """Work one run's retryable entries once, a bounded number of groups, one call at a
        time; answers what was recorded."""
        now = self.clock()
        found = self._work(self.queries.run(run_id, now, self.settings.max_revert_attempts), now)
        return self._clean(run_id, found, worker=worker, by=by, stop=stop)

    def _work(self, run: RunRow | None, now: datetime) -> Work | None:
        """The run's row and the page of its entries a pass may work."""
        if run is None:
            return None
        overdue_only = run.status not in TERMINAL
        rows = self.queries.retryable_entries(
            run.run_id, now, self.settings.max_revert_attempts, overdue_leases_only=overdue_only
        )
        return run, rows

    def _clean(
        self,
        run_id: UUID,
        found: Work | None,
        *,
        worker: str,
        by: str,
        stop: Halt | None,
    ) -> Summary:
        if found is None:
            return Summary(by=by)
        running, rows = found
        # What another live runner serves is left to it: this one has not loaded it.
        groups = [g for g in group_entries(rows) if not self._left_to_others(g)]
        groups = groups[: self.settings.cleanup_groups_per_run]
        summary = Summary(by=by, remaining=running.unresolved)
        # Built from the rows just read, not replayed: a row the stream has moved past loses
        # its claim's save to the version check, and that group is then claimed entry by entry.
        loaded = {row.entry_id: entry_from_row(row) for g in groups for row in g.rows}
        judged: Judged | None = None
        worked = False
        for group in groups:
            if stop is not None and stop.is_set():
                break
            self._claim(group, loaded, worker)
            self._save_then_claim(run_id, judged, group, worker, summary)
            judged = None
            if group.claimed:
                worked = True
                judged = self._judge(run_id, group, self.give_back.verdict(group), worker)
        if worked:
            self._save_last(run_id, judged, worker, summary)
        return summary

    def _left_to_others(self, group: Group) -> bool:
        return not self.give_back.served_here(group) and self.elsewhere(self.give_back.needs(group))

    def _claim(self, group: Group, loaded: dict[UUID, Resource], worker: str) -> None:
        """Claim the group in memory, for one call: its budget plus the slack."""
        now = self.clock()
        expires = self._expiry(group)
        max_attempts = self.settings.max_revert_attempts
        for row in group.rows:
            entry = loaded.get(row.entry_id)
            if entry is not None and entry.retryable(now, max_attempts):
                entry.claim_revert(worker, now, expires, max_attempts)
                group.claimed[entry.id] = entry

    def _expiry(self, group: Group) -> datetime:
        slack = timedelta(seconds=self.settings.claim_slack_s)
        return self.clock() + self.give_back.budget(group) + slack

    def _save_then_claim(
        self,
        run_id: UUID,
        previous: Judged | None,
        group: Group,
        worker: str,
        summary: Summary,
    ) -> None:
        """The last call's verdict and the next call's claim in one save: the claim is durable
        before its call starts, and no claim is saved for a call that is not about to start."""
        before = [*previous.group.claimed.values(), previous.line] if previous else []
        claims = list(group.claimed.values())
        if not before and not claims:
            return
        try:
            self.app.save(*before, *claims)
        except IntegrityError:
            # Someone else moved an entry of one of the two groups: settle each apart.
            if previous is not None:
                self._settle_apart(run_id, previous, worker, summary)
            group.claimed = self._claim_each(group, worker)
            return
        if previous is not None:
            summary.add(previous.counts)

    def _save_last(
        self, run_id: UUID, judged: Judged | None, worker: str, summary: Summary
    ) -> None:
        """The pass's last verdict with its one summary line."""
        if judged is not None:
            final = replace(summary)
            final.add(judged.counts)
            try:
                self.app.save(
                    *judged.group.claimed.values(),
                    judged.line,
                    swept_line(run_id, final, self.clock()),
                )
            except IntegrityError:
                self._settle_apart(run_id, judged, worker, summary)
            else:
                summary.add(judged.counts)
                return
        self.app.save(swept_line(run_id, summary, self.clock()))

    def _claim_each(self, group: Group, worker: str) -> dict[UUID, Resource]:
        won: dict[UUID, Resource] = {}
        max_attempts = self.settings.max_revert_attempts
        for row in group.rows:
            fresh = self.streams.load(Resource, [row.entry_id]).get(row.entry_id)
            now = self.clock()
            if fresh is None or not fresh.retryable(now, max_attempts):
                continue
            fresh.claim_revert(worker, now, self._expiry(group), max_attempts)
            try:
                self.app.save(fresh)
            except IntegrityError:
                continue
            won[fresh.id] = fresh
        return won

    def _judge(self, run_id: UUID, group: Group, verdict: Verdict, worker: str) -> Judged:
        return judge_group(
            run_id,
            group,
            verdict,
            worker,
            self.clock(),
            self.settings.backoff,
            self.settings.max_revert_attempts,
        )

    def _settle_apart(self, run_id: UUID, judged: Judged, worker: str, summary: Summary) -> None:
        """Something else changed an entry while the call was out (an expiry, a reconcile, a
        worker that took over an expired claim): judge on fresh state only what this worker
        still holds, and save it alone."""
        fresh = self.streams.load(Resource, list(judged.group.claimed))
        # Settled by another writer while the call was out: no longer remaining either.
        summary.remaining -= sum(1 for e in fresh.values() if not e.unresolved)
        mine = {
            i: e
            for i, e in fresh.items()
            if e.claim_worker == worker and e.attempts == judged.group.claimed[i].attempts
        }
        if not mine:
            return
        again = self._judge(run_id, Group(judged.group.rows, mine), judged.verdict, worker)
        try:
            self.app.save(*mine.values(), again.line)
        except IntegrityError:
            log.warning("run %s: a verdict lost a race and will be retried", run_id)
            return
        summary.add(again.counts)

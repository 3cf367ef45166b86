from __future__ import annotations

import logging
import random
import threading
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import groupby
from typing import Any
from uuid import UUID, uuid4

from eventsourcing.persistence import IntegrityError

from application.answers import Verdict, classify_revert
from application.deadline import call_with_deadline
from application.errors import BadRequest
from application.inputs import person
from application.leases import CORE_LEASE, CoreLease
from application.ledger import Ledger, save_with_retry
from application.parts import Parts, Service
from domain.errors import DomainError
from domain.resource import PLACEHOLDER_KIND, FailureMode, Resource
from domain.run import TERMINAL
from domain.runlog import LogEntry
from projections.queries import EntryRow

log = logging.getLogger("runledger.cleanup")
TROUBLE_SWEEPS = 5


@dataclass
class Summary:
    """What one pass over one run attempted and what came of it."""

    attempted: int = 0
    reverted: int = 0
    drifted: int = 0
    failed: int = 0
    remaining: int = 0
    by: str = ""


@dataclass
class Group:
    """Entries one call gives back: a lease alone, or everything one step made."""

    rows: list[EntryRow]
    claimed: dict[UUID, Resource] = field(default_factory=dict)

    @property
    def head(self) -> EntryRow:
        return self.rows[0]

    @property
    def is_lease(self) -> bool:
        return self.head.kind == "override"

    @property
    def what(self) -> str:
        return self.head.ref if self.is_lease else (self.head.action or "an unknown action")


def group_entries(rows: list[EntryRow]) -> list[Group]:
    def key(row: EntryRow) -> tuple[str, ...]:
        if row.kind == "override":
            return ("lease", str(row.entry_id))
        return ("step", row.step, row.idempotency_key, row.action or "", str(row.kind == "@step"))

    ordered = sorted(rows, key=key)
    groups = [Group(list(members)) for _, members in groupby(ordered, key=key)]
    first_seen = {key(r): i for i, r in reversed(list(enumerate(rows)))}
    return sorted(groups, key=lambda g: first_seen[key(g.head)])


class Cleanup(Service):
    """Gives back what terminal runs took: the sweep, one run's pass, and a person's retry."""

    def __init__(self, parts: Parts, ledger: Ledger, core_lease: CoreLease) -> None:
        super().__init__(parts)
        self.ledger = ledger
        self.core_lease = core_lease
        self._troubled: dict[UUID, int] = {}

    def sweep(self, worker: str, stop: threading.Event | None = None) -> dict[UUID, Summary]:
        """One bounded pass over the runs that owe the world something."""
        self.projector.catch_up()
        now = self.clock()
        batch = self.settings.cleanup_run_batch
        found = self.queries.candidate_runs(
            now, self.settings.max_revert_attempts, batch + len(self._troubled)
        )
        # A run whose pass just raised waits its turn behind the others, or it would hold a
        # slot of every sweep for ever; several workers start at different runs.
        candidates = [r for r in found if r not in self._troubled][:batch]
        random.shuffle(candidates)
        self._troubled = {r: n - 1 for r, n in self._troubled.items() if n > 1}
        summaries: dict[UUID, Summary] = {}
        for run_id in candidates:
            if stop is not None and stop.is_set():
                break
            try:
                summaries[run_id] = self.clean_run(run_id, worker=worker, by=worker)
            except Exception:  # one run's bad night must not stall the others
                log.exception("cleanup of run %s failed; the sweep goes on", run_id)
                self._troubled[run_id] = TROUBLE_SWEEPS
        self.projector.catch_up()
        return summaries

    def manual_cleanup(self, run_id: UUID, by: str) -> Summary:
        """A person asks again: reset the run's counters, log it, and work the run now."""
        person(by, "a manual cleanup")
        self.projector.catch_up()
        run = self.ledger.get_run(run_id)
        if not run.is_terminal:
            raise BadRequest(f"run {run_id} is still running; its ledger is still growing")
        now = self.clock()
        ids = [e.entry_id for e in self.queries.unresolved_entries(run_id)]

        def reset() -> list[Any]:
            entries = self.streams.load(Resource, ids).values()
            chosen = [e for e in entries if e.unresolved and not e.under_live_claim(now)]
            for entry in chosen:
                entry.reset_attempts(by, now)
            line = LogEntry(
                key=f"retry|{run_id}|{uuid4()}", run_id=run_id, kind="cleanup.retry",
                detail={"by": by, "resources": len(chosen)}, at=now,
            )
            return [*chosen, line]

        save_with_retry(self.app, reset)
        self.projector.catch_up()
        summary = self.clean_run(run_id, worker=f"{by} (manual)", by=by)
        self.projector.catch_up()
        return summary

    def clean_run(self, run_id: UUID, *, worker: str, by: str) -> Summary:
        """Work one run's retryable entries once, a bounded number of groups."""
        now = self.clock()
        max_attempts = self.settings.max_revert_attempts
        running = self.queries.run(run_id, now, max_attempts)
        if running is None:
            return Summary(by=by)
        rows = self.queries.retryable_entries(
            run_id, now, max_attempts, overdue_leases_only=running.status not in TERMINAL
        )
        groups = group_entries(rows)[: self.settings.cleanup_groups_per_run]
        summary = Summary(by=by, remaining=running.unresolved)
        self._claim(groups, worker, now)
        results = [(g, self._give_back(g)) for g in groups if g.claimed]
        if not results:
            return summary
        lines = [self._apply(run_id, g, v, worker, summary) for g, v in results]
        summary.remaining -= summary.reverted
        try:
            self.app.save(
                *[e for g, _ in results for e in g.claimed.values()], *lines,
                self._swept(run_id, summary),
            )
        except IntegrityError:
            # The failed save took every pending event it was given, the swept line's too.
            summary = self._save_groups_apart(run_id, results, worker, by, running.unresolved)
        return summary

    def _swept(self, run_id: UUID, summary: Summary) -> LogEntry:
        return LogEntry(
            key=f"swept|{run_id}|{uuid4()}", run_id=run_id, kind="cleanup.swept",
            detail=asdict(summary), at=self.clock(),
        )

    def _claim(self, groups: list[Group], worker: str, now: datetime) -> None:
        ids = [row.entry_id for g in groups for row in g.rows]
        loaded = self.streams.load(Resource, ids)
        max_attempts = self.settings.max_revert_attempts
        expires = self._pass_expiry(groups, now)
        for group in groups:
            for row in group.rows:
                entry = loaded.get(row.entry_id)
                if entry is not None and entry.retryable(now, max_attempts):
                    entry.claim_revert(worker, now, expires, max_attempts)
                    group.claimed[entry.id] = entry
        try:
            self.app.save(*[e for g in groups for e in g.claimed.values()])
        except IntegrityError:
            # Another worker took some of them: claim one at a time and keep what we win.
            for group in groups:
                group.claimed = self._claim_each(group, worker, now, expires)

    def _pass_expiry(self, groups: list[Group], now: datetime) -> datetime:
        """The calls are made one after another and every verdict is saved at the end of the
        pass, so each claim must last the whole pass: every call's budget, plus the slack."""
        budgets = sum((self._budget(g) for g in groups), timedelta())
        return now + budgets + timedelta(seconds=self.settings.claim_slack_s)

    def _claim_each(
        self, group: Group, worker: str, now: datetime, expires: datetime
    ) -> dict[UUID, Resource]:
        won: dict[UUID, Resource] = {}
        for row in group.rows:
            fresh = self.streams.load(Resource, [row.entry_id]).get(row.entry_id)
            if fresh is None or not fresh.retryable(now, self.settings.max_revert_attempts):
                continue
            fresh.claim_revert(worker, now, expires, self.settings.max_revert_attempts)
            try:
                self.app.save(fresh)
            except IntegrityError:
                continue
            won[fresh.id] = fresh
        return won

    def _budget(self, group: Group) -> timedelta:
        action = None if group.is_lease else self.registry.action(group.head.action)
        budget = action.budget_ms if action and action.budget_ms else None
        return timedelta(milliseconds=budget or self.settings.default_budget_ms)

    def _give_back(self, group: Group) -> Verdict:
        seconds = self._budget(group).total_seconds()
        head = group.head
        if group.is_lease:
            found = self.registry.lease_for_ref(head.ref)
            if found is None:
                return Verdict("terminal", f'no module registers the lease "{head.ref}"')
            lease, target = found
            payload = head.payload or {}
            outcome = call_with_deadline(
                lease.restore,
                {
                    "baseline": payload.get("baseline"), "expected": payload.get("applied"),
                    "run_id": str(head.run_id), "target": target,
                },
                seconds,
            )
            return classify_revert(outcome, head.ref)
        if not head.action:
            return Verdict("terminal", "nothing records which action created this")
        if head.action == CORE_LEASE and head.kind == PLACEHOLDER_KIND:
            return self.core_lease.give_back_unanswered(
                head.run_id, head.step, head.idempotency_key, seconds
            )
        action = self.registry.action(head.action)
        if action is None:
            return Verdict(
                "terminal",
                f'no module registers "{head.action}", so its resources cannot be given back',
            )
        if action.revert is None:
            return Verdict("terminal", f"{head.action} declares no revert()")
        resources = [
            {"kind": r.kind, "ref": r.ref, "payload": r.payload, "member_key": r.member_key}
            for r in group.rows
            if r.entry_id in group.claimed and r.kind != "@step"
        ]
        outcome = call_with_deadline(
            action.revert,
            {"resources": resources, "idempotency_key": head.idempotency_key,
             "run_id": str(head.run_id)},
            seconds,
        )
        return classify_revert(outcome, head.action)

    def _apply(
        self, run_id: UUID, group: Group, verdict: Verdict, worker: str, summary: Summary
    ) -> LogEntry:
        now = self.clock()
        names = []
        for entry in group.claimed.values():
            names.append(f"{entry.kind}:{entry.ref}")
            summary.attempted += 1
            try:
                self._judge(entry, verdict, worker, group.what, now, summary)
            except DomainError as error:
                log.warning("verdict on %s not applied: %s", entry.id, error)
        first = min(group.claimed.values(), key=lambda e: str(e.id))
        detail: dict[str, Any] = {
            "what": group.what, "outcome": verdict.outcome, "resources": sorted(names),
            "attempt": first.attempts, "by": worker,
        }
        if verdict.error:
            detail["error"] = verdict.error
        if verdict.failed:
            detail["failed"] = sorted(verdict.failed)
        kind = "cleanup.reverted" if verdict.outcome == "done" and not verdict.failed else (
            "cleanup.drifted" if verdict.outcome == "drifted" else "cleanup.failed"
        )
        # The verdict's own version names this call: an attempt number repeats after a reset.
        return LogEntry(
            key=f"call|{first.id}|{first.version}", run_id=run_id, kind=kind, detail=detail,
            at=now,
        )

    @staticmethod
    def _judge(
        entry: Resource, verdict: Verdict, worker: str, what: str, now: datetime,
        summary: Summary,
    ) -> None:
        attempt = entry.attempts
        if verdict.outcome == "done" and entry.ref not in verdict.failed:
            entry.mark_reverted(worker, attempt, now)
            summary.reverted += 1
        elif verdict.outcome == "done":
            error = f'{what} could not give "{entry.ref}" back'
            entry.fail_revert(worker, attempt, "retry", error, now)
            summary.failed += 1
        elif verdict.outcome == "drifted":
            entry.mark_drifted(worker, attempt, verdict.current, verdict.error or "drifted", now)
            summary.drifted += 1
        else:
            mode: FailureMode = "terminal" if verdict.outcome == "terminal" else "retry"
            entry.fail_revert(worker, attempt, mode, verdict.error or "refused", now)
            summary.failed += 1

    def _save_groups_apart(
        self, run_id: UUID, results: list[tuple[Group, Verdict]], worker: str, by: str,
        unresolved: int,
    ) -> Summary:
        """Something else changed an entry mid-call (an expiry, a reconcile): save each group on
        fresh state, judging only what this worker still holds; answers what was recorded."""
        summary = Summary(by=by, remaining=unresolved)
        for group, verdict in results:
            fresh = self.streams.load(Resource, list(group.claimed))
            # Settled by another writer while the call was out: no longer remaining either.
            summary.remaining -= sum(1 for e in fresh.values() if not e.unresolved)
            mine = {
                i: e for i, e in fresh.items()
                if e.claim_worker == worker and e.attempts == group.claimed[i].attempts
            }
            if not mine:
                continue
            regrouped = Group(group.rows, mine)
            counted = Summary()
            line = self._apply(run_id, regrouped, verdict, worker, counted)
            try:
                self.app.save(*mine.values(), line)
            except IntegrityError:
                log.warning("run %s: a verdict lost a race and will be retried", run_id)
                continue
            summary.attempted += counted.attempted
            summary.reverted += counted.reverted
            summary.drifted += counted.drifted
            summary.failed += counted.failed
        summary.remaining -= summary.reverted
        self.app.save(self._swept(run_id, summary))
        return summary

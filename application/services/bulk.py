"""Cleanup after an outage: preview which runs and entries a filter selects (a plan, writing
nothing), then retry exactly those runs, if the selection is still what the plan saw. A lease
entry whose target another live run holds is shown as left alone, before anything is done."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from runledger.application.errors import BadRequest, Conflict
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.holds import Held, Holds
from runledger.application.services.sweep.verdicts import Retried
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND
from runledger.domain.status import CleanupStatus
from runledger.projections.pages import Pages, Where
from runledger.projections.queries import EntryRow, Queries

MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Planned:
    """One entry a plan would ask about, and what it would ask."""

    entry: EntryRow
    ask: str
    held: Held | None = None
    """Another live run holds the lease's target: the retry leaves this entry as it is."""


@dataclass
class PlannedRun:
    run_id: UUID
    name: str
    status: str
    cleanup_status: CleanupStatus
    entries: list[Planned] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    where: Where
    runs: list[PlannedRun]
    fingerprint: str


def ask(entry: EntryRow, held: Held | None = None) -> str:
    """The call a retry would make for this entry, in words."""
    if held is not None:
        return f"nothing ({held.said})"
    if entry.kind == LEASE_KIND:
        return f"restore the baseline of {entry.ref} ({entry.module})"
    if entry.kind == PLACEHOLDER_KIND:
        return f"give back whatever {entry.action} made for step {entry.step} ({entry.module})"
    return f"{entry.action}: revert {entry.kind}:{entry.ref}"


def fingerprint(runs: list[PlannedRun]) -> str:
    """Changes when any selected entry changes (a new version) or the selection does, and
    when another run comes to hold, or stops holding, a planned lease's target."""
    shape = [[str(r.run_id), [_shape(p) for p in r.entries]] for r in runs]
    return hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:32]


def _shape(planned: Planned) -> list[object]:
    shape: list[object] = [str(planned.entry.entry_id), planned.entry.version]
    return shape if planned.held is None else [*shape, str(planned.held.holder)]


class Bulk:
    def __init__(
        self,
        *,
        queries: Queries,
        pages: Pages,
        cleanup: Cleanup,
        holds: Holds,
        max_attempts: int,
        clock: Callable[[], datetime],
    ) -> None:
        self.queries = queries
        self.pages = pages
        self.cleanup = cleanup
        self.holds = holds
        self.max_attempts = max_attempts
        self.clock = clock

    def plan(self, where: Where) -> Plan:
        """Which ended runs and unresolved entries ``where`` selects; writes nothing."""
        found = self.pages.selected(where, MAX_ENTRIES + 1)
        if len(found) > MAX_ENTRIES:
            raise BadRequest(
                f"the filter selects more than {MAX_ENTRIES:,} entries; narrow it "
                "(module, action, run status, cleanup status or time window)"
            )
        rows = [EntryRow.of(row) for row in found]
        order = list(dict.fromkeys(r.run_id for r in rows))
        now = self.clock()
        runs = {r.run_id: r for r in self.queries.runs(order, now, self.max_attempts)}
        planned: list[PlannedRun] = []
        for run_id in order:
            run = runs.get(run_id)
            wanted = where.cleanup_status
            if run is None or (wanted is not None and run.cleanup_status != wanted):
                continue
            mine = self._planned(run_id, [r for r in rows if r.run_id == run_id])
            planned.append(PlannedRun(run_id, run.name, run.status, run.cleanup_status, mine))
        return Plan(where, planned, fingerprint(planned))

    def _planned(self, run_id: UUID, rows: list[EntryRow]) -> list[Planned]:
        held = {h.entry_id: h for h in self.holds.among(run_id, rows)}
        return [Planned(r, ask(r, held.get(r.entry_id)), held.get(r.entry_id)) for r in rows]

    def apply(self, where: Where, expected: str, by: str) -> dict[UUID, Retried]:
        """Retry exactly the runs of the plan named by ``expected``: each run's manual cleanup in
        ``by``'s name. Refused when the selection has changed since the plan was made; a lease
        entry another live run holds is left as it is (``manual_cleanup`` asks again)."""
        plan = self.plan(where)
        if plan.fingerprint != expected:
            runs = f"{len(plan.runs)} run{'' if len(plan.runs) == 1 else 's'}"
            raise Conflict(
                f"the plan {_short(expected)} is stale: the selection is now "
                f"{_short(plan.fingerprint)} ({runs}); make a new plan and read it"
            )
        return {r.run_id: self.cleanup.manual_cleanup(r.run_id, by) for r in plan.runs}


def _short(fingerprint: str) -> str:
    return fingerprint if len(fingerprint) <= 12 else f"{fingerprint[:12]}…"

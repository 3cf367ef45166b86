"""A definition's dry run: the checks a run of its draft would meet, against the loaded modules,
with nothing called that changes a world (no perform, apply, revert or restore). A start runs
the very same checks, for a run starting now (``check_start``), and refuses on any problem.
The module's own checks are in module_checks.py, the lease steps' windows in lease_windows.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from runledger.application.errors import BadRequest
from runledger.application.modules.protocol import Action, Registry
from runledger.application.services.lease_windows import (
    PlannedLease,
    held,
    lease_window,
    overlapping,
    phase_offsets,
)
from runledger.application.services.leases import CORE_LEASE, CoreLease
from runledger.application.services.module_checks import check_problems, params_problems
from runledger.application.services.serving import ServedElsewhere, nowhere, served_nowhere
from runledger.application.settings import Settings
from runledger.domain.spec import PhaseSpec, RunSpec, StepSpec

MAX_PROBLEMS = 500
"""Problems one dry run records; the rest are counted in one last line."""
CHECK_BUDGET_S = 5.0
"""The most one module's dry-run check may take (its action's budget when that is shorter)."""
TOTAL_BUDGET_S = 30.0
"""The most all of one dry run's module calls may take: a verify holds its request open, so a
module whose checks hang must not hold it for a thousand steps' budgets."""
SAID_AT_START = 5
"""Problems a refused start says; the dry run of a definition lists every one."""


class StartRefused(BadRequest):
    """A start refused by the dry run's checks: the first problems in one sentence, each
    naming its field (the first one's field is where the API's 422 points)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        said = "; ".join(problems[:SAID_AT_START])
        more = len(problems) - SAID_AT_START
        super().__init__(said + (f"; and {more:,} more" if more > 0 else ""))


class DryRunner:
    """Finds every problem a draft has, as sentences naming the field
    (``phases.0.steps.1.params.count: ...``). Reads the registry and the store; writes nothing."""

    def __init__(
        self,
        *,
        registry: Registry,
        core_lease: CoreLease,
        settings: Settings,
        clock: Callable[[], datetime],
        serving: Callable[[], ServedElsewhere] = served_nowhere,
    ) -> None:
        self.registry = registry
        self.core_lease = core_lease
        self.settings = settings
        self.clock = clock
        self.serving = serving

    def problems(self, spec: RunSpec, starts: list[datetime]) -> list[str]:
        """Every problem of ``spec``, for runs starting at ``starts`` (now when empty)."""
        elsewhere = self.serving()
        deadline = time.monotonic() + TOTAL_BUDGET_S
        found: list[str] = []
        leases: list[PlannedLease] = []
        offsets = phase_offsets(spec)
        for p, phase in enumerate(spec.phases):
            found += advance_problems(p, phase)
            for s, step in enumerate(phase.steps):
                where = f"phases.{p}.steps.{s}"
                if step.action == CORE_LEASE:
                    planned, said = self._lease(where, step, p, offsets[p], elsewhere)
                    found += said
                    leases += [planned] if planned is not None else []
                else:
                    found += self._action(where, step, elsewhere, deadline)
        found += overlapping(leases, spec)
        found += self._held(leases, starts or [self.clock()])
        return bounded(found)

    def check_start(self, spec: RunSpec) -> None:
        """SPEC "A start checks what a dry run checks": a run of ``spec`` starting now is
        refused (StartRefused) with whatever a dry run would find, before anything is written."""
        found = self.problems(spec, [])
        if found:
            raise StartRefused(found)

    def held_now(self, spec: RunSpec) -> list[str]:
        """The dry run's held-target problems alone, for a run starting now: what a due
        occurrence waits on."""
        offsets = phase_offsets(spec)
        leases = []
        for p, phase in enumerate(spec.phases):
            for s, step in enumerate(phase.steps):
                if step.action == CORE_LEASE:
                    planned, _ = self._lease(f"phases.{p}.steps.{s}", step, p, offsets[p], nowhere)
                    leases += [planned] if planned is not None else []
        return self._held(leases, [self.clock()])

    def _action(
        self, where: str, step: StepSpec, elsewhere: ServedElsewhere, deadline: float
    ) -> list[str]:
        action = self.registry.action(step.action)
        if action is None or action.perform is None:
            if elsewhere(step.action):
                return []  # served by another runner: only the shape can be checked here
            return [f'{where}.action: no module registers "{step.action}"']
        if action.params is None and action.check is None:
            return []
        budget = min(self._budget(action), deadline - time.monotonic())
        if budget <= 0:
            return [
                f"{where}.action: not checked: the dry run's {TOTAL_BUDGET_S:g}s for module "
                "checks ran out before this step"
            ]
        found = params_problems(where, action, step.params, budget)
        return found + check_problems(where, action, step.params, budget)

    def _budget(self, action: Action) -> float:
        budget_ms = action.budget_ms or self.settings.default_budget_ms
        return min(budget_ms / 1000, CHECK_BUDGET_S)

    def _lease(
        self, where: str, step: StepSpec, phase: int, offset: float, elsewhere: ServedElsewhere
    ) -> tuple[PlannedLease | None, list[str]]:
        def known(lease: str) -> bool:
            return lease in self.registry.leases or elsewhere(lease)

        return lease_window(
            where, step, phase, offset, known=known, lease_max_s=self.settings.lease_max_s
        )

    def _held(self, leases: list[PlannedLease], starts: list[datetime]) -> list[str]:
        return held(leases, starts, self.core_lease, self.clock())


def advance_problems(p: int, phase: PhaseSpec) -> list[str]:
    if phase.advance == "manual" and phase.after_s > 0:
        return [
            f"phases.{p}.after_s: a manual phase waits for a person, not {phase.after_s:g}s; "
            "make it auto or drop after_s"
        ]
    return []


def bounded(found: list[str]) -> list[str]:
    if len(found) <= MAX_PROBLEMS:
        return found
    return [*found[:MAX_PROBLEMS], f"… and {len(found) - MAX_PROBLEMS:,} more problems"]

"""A definition's dry run: the checks a run of its draft would meet, against the loaded modules,
with nothing called that changes a world (no perform, apply, revert or restore). A start runs
the very same checks, for a run starting now (``check_start``), and refuses on any problem.

Lease windows are computed from the spec's phase timings: a step of phase p starts at the
earliest ``sum(after_s)`` of the auto phases before it after its occurrence's time (a manual
phase adds nothing: a person may advance it at once). A target is held over an occurrence's
window when another run holds it now until past the moment the lease step could start.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from runledger.application.errors import BadRequest
from runledger.application.modules.deadline import Raised, Returned, TimedOut, call_with_deadline
from runledger.application.modules.protocol import Action, Registry
from runledger.application.services.leases import CORE_LEASE, CoreLease, LeaseParams
from runledger.application.services.serving import ServedElsewhere, nowhere, served_nowhere
from runledger.application.settings import Settings
from runledger.domain.resource import MAX_REF
from runledger.domain.spec import PhaseSpec, RunSpec, StepSpec
from runledger.domain.values import MAX_SHOWN, made_storable, plain_message

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


@dataclass(frozen=True)
class PlannedLease:
    where: str
    lease: str
    target: str
    phase: int
    offset_s: float
    duration_s: float


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
        found = self._params_model(where, action, step.params, budget)
        return found + self._check(where, action, step.params, budget)

    def _params_model(
        self, where: str, action: Action, params: dict[str, Any], budget: float
    ) -> list[str]:
        if action.params is None:
            return []
        outcome = call_with_deadline(_validate, {"model": action.params, "params": params}, budget)
        if isinstance(outcome, Returned) and isinstance(outcome.value, list):
            return [
                f"{where}.params{_path(loc)}: {made_storable(str(msg))}"
                for loc, msg in outcome.value
            ]
        return [f"{where}.params: {self._failed(action, 'params model', outcome)}"]

    def _check(
        self, where: str, action: Action, params: dict[str, Any], budget: float
    ) -> list[str]:
        if action.check is None:
            return []
        outcome = call_with_deadline(action.check, {"params": copy.deepcopy(params)}, budget)
        if isinstance(outcome, Returned) and isinstance(outcome.value, list):
            said = [_module_problem(item) for item in outcome.value]
            if None not in said:
                return [f"{where}.params{p}" for p in said if p is not None]
        return [f"{where}.action: {self._failed(action, 'dry-run check', outcome)}"]

    def _budget(self, action: Action) -> float:
        budget_ms = action.budget_ms or self.settings.default_budget_ms
        return min(budget_ms / 1000, CHECK_BUDGET_S)

    def _failed(self, action: Action, what: str, outcome: object) -> str:
        name = f'the {what} of "{action.id}"'
        if isinstance(outcome, TimedOut):
            return f"{name} did not answer within {outcome.seconds:g}s"
        if isinstance(outcome, Raised):
            return f"{name} failed: {made_storable(outcome.message)}"
        return f"{name} answered what core cannot read (a list of problems is expected)"

    def _lease(
        self, where: str, step: StepSpec, phase: int, offset: float, elsewhere: ServedElsewhere
    ) -> tuple[PlannedLease | None, list[str]]:
        try:
            wanted = LeaseParams.model_validate(step.params)
        except ValidationError as error:
            said = [f"{where}.params{_path(e['loc'])}: {plain_message(e)}" for e in error.errors()]
            return None, said
        found = []
        if wanted.lease not in self.registry.leases and not elsewhere(wanted.lease):
            found.append(f'{where}.params.lease: no module registers the lease "{wanted.lease}"')
        if len(f"{wanted.lease}#{wanted.target}") > MAX_REF:
            found.append(
                f"{where}.params.target: the lease ref {wanted.lease}#{wanted.target} is over "
                f"{MAX_REF} characters"
            )
        if wanted.duration_s > self.settings.lease_max_s:
            found.append(
                f"{where}.params.duration_s: a lease may last at most "
                f"{self.settings.lease_max_s}s (EVENT_LEASE_MAX_S); {wanted.duration_s:g}s "
                "was asked"
            )
        planned = PlannedLease(where, wanted.lease, wanted.target, phase, offset, wanted.duration_s)
        return planned, found

    def _held(self, leases: list[PlannedLease], starts: list[datetime]) -> list[str]:
        """Targets another run holds now past the moment a lease step could take them."""
        now = self.clock()
        found = []
        for lease in leases:
            holder = self.core_lease.holder(lease.lease, lease.target, now)
            if holder is None:
                continue
            until = holder.until
            for start in sorted(starts):
                begins = max(start, now) + timedelta(seconds=lease.offset_s)
                if until is None or until > begins or begins <= now:
                    shown = "" if until is None else f" until {until:%Y-%m-%d %H:%M:%S} UTC"
                    when = "now" if start <= now else f"at {start:%Y-%m-%d %H:%M:%S} UTC"
                    found.append(
                        f"{lease.where}.params.target: {lease.target!r} ({lease.lease}) is held "
                        f"by run {holder.run_id}{shown}, over the window of a run starting {when}"
                    )
                    break
        return found


def _validate(model: type[BaseModel], params: dict[str, Any]) -> list[tuple[list[Any], str]]:
    try:
        model.model_validate(params)
    except ValidationError as error:
        return [(list(e["loc"]), plain_message(e)) for e in error.errors()]
    return []


def _path(loc: Any) -> str:
    return "".join(f".{made_storable(str(part), 64)}" for part in loc)


def _module_problem(item: Any) -> str | None:
    """``{field, problem}`` as ``.field: problem``, a sentence as ``: sentence``; None when it is
    neither (the whole answer is then unreadable)."""
    if isinstance(item, str):
        return f": {made_storable(item, MAX_SHOWN)}"
    if isinstance(item, dict) and isinstance(item.get("problem"), str):
        field = item.get("field")
        path = f".{made_storable(field, 200)}" if isinstance(field, str) and field else ""
        return f"{path}: {made_storable(item['problem'], MAX_SHOWN)}"
    return None


def phase_offsets(spec: RunSpec) -> list[float]:
    """The earliest each phase can start, in seconds after its run starts."""
    offsets, elapsed = [], 0.0
    for phase in spec.phases:
        offsets.append(elapsed)
        elapsed += phase.after_s if phase.advance == "auto" else 0.0
    return offsets


def advance_problems(p: int, phase: PhaseSpec) -> list[str]:
    if phase.advance == "manual" and phase.after_s > 0:
        return [
            f"phases.{p}.after_s: a manual phase waits for a person, not {phase.after_s:g}s; "
            "make it auto or drop after_s"
        ]
    return []


def overlapping(leases: list[PlannedLease], spec: RunSpec) -> list[str]:
    """A later step of the same spec asking for a target its own earlier lease still holds:
    core.lease refuses it. Only when no manual phase lies between (a person may then wait)."""
    found = []
    for index, later in enumerate(leases):
        for earlier in leases[:index]:
            if (earlier.lease, earlier.target) != (later.lease, later.target):
                continue
            between = spec.phases[earlier.phase : later.phase]
            gap = later.offset_s - earlier.offset_s
            if all(p.advance == "auto" for p in between) and gap < earlier.duration_s:
                found.append(
                    f"{later.where}.params.target: {later.target!r} ({later.lease}) is still "
                    f"held by this spec's own step {earlier.where} ({earlier.duration_s:g}s "
                    f"from {earlier.offset_s:g}s in); this step starts {gap:g}s after it"
                )
                break
    return found


def bounded(found: list[str]) -> list[str]:
    if len(found) <= MAX_PROBLEMS:
        return found
    return [*found[:MAX_PROBLEMS], f"… and {len(found) - MAX_PROBLEMS:,} more problems"]

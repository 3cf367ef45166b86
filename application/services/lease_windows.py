"""The core.lease steps of a spec as a dry run sees them: each one's window, and the targets
held over it, by this spec's own earlier steps or by another run now.

Lease windows are computed from the spec's phase timings: a step of phase p starts at the
earliest ``sum(after_s)`` of the auto phases before it after its occurrence's time (a manual
phase adds nothing: a person may advance it at once). A target is held over an occurrence's
window when another run holds it now until past the moment the lease step could start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError

from runledger.application.services.lease_params import LeaseParams
from runledger.application.services.leases import CoreLease
from runledger.application.services.module_checks import field_path
from runledger.domain.resource import MAX_REF
from runledger.domain.spec import RunSpec, StepSpec
from runledger.domain.values import plain_message


@dataclass(frozen=True)
class PlannedLease:
    where: str
    lease: str
    target: str
    phase: int
    offset_s: float
    duration_s: float


def phase_offsets(spec: RunSpec) -> list[float]:
    """The earliest each phase can start, in seconds after its run starts."""
    offsets, elapsed = [], 0.0
    for phase in spec.phases:
        offsets.append(elapsed)
        elapsed += phase.after_s if phase.advance == "auto" else 0.0
    return offsets


def lease_window(
    where: str,
    step: StepSpec,
    phase: int,
    offset: float,
    *,
    known: Callable[[str], bool],
    lease_max_s: float,
) -> tuple[PlannedLease | None, list[str]]:
    """A core.lease step's window, and what is wrong with its params (``known``: whether some
    module, here or on another runner, registers a lease)."""
    try:
        wanted = LeaseParams.model_validate(step.params)
    except ValidationError as error:
        said = [f"{where}.params{field_path(e['loc'])}: {plain_message(e)}" for e in error.errors()]
        return None, said
    found = []
    if not known(wanted.lease):
        found.append(f'{where}.params.lease: no module registers the lease "{wanted.lease}"')
    if len(f"{wanted.lease}#{wanted.target}") > MAX_REF:
        found.append(
            f"{where}.params.target: the lease ref {wanted.lease}#{wanted.target} is over "
            f"{MAX_REF} characters"
        )
    if wanted.duration_s > lease_max_s:
        found.append(
            f"{where}.params.duration_s: a lease may last at most "
            f"{lease_max_s}s (EVENT_LEASE_MAX_S); {wanted.duration_s:g}s "
            "was asked"
        )
    window = PlannedLease(where, wanted.lease, wanted.target, phase, offset, wanted.duration_s)
    return window, found


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


def held(
    leases: list[PlannedLease], starts: list[datetime], core_lease: CoreLease, now: datetime
) -> list[str]:
    """Targets another run holds now past the moment a lease step could take them."""
    found = []
    for lease in leases:
        holder = core_lease.holder(lease.lease, lease.target, now)
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

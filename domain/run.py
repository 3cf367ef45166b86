from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import PhaseOutOfOrder, RunNotRunning

RunStatus = Literal["running", "completed", "cancelled", "aborted"]
TERMINAL: frozenset[str] = frozenset({"completed", "cancelled", "aborted"})


def ended(status: str) -> bool:
    """Whether a run of this status has ended: what it made is no longer in use by it."""
    return status in TERMINAL


@dataclass(frozen=True)
class Origin:
    """The definition version a run was started from, by which occurrence, and that version's
    verified stamp (None when it was published unverified)."""

    definition: str
    version: int
    occurrence_id: UUID
    verified_by: str | None = None
    verified_at: datetime | None = None


class Run(Aggregate):
    """The part of a run the ledger needs: that it started, and how it ended."""

    class Started(Aggregate.Created):
        name: str
        at: datetime
        spec: dict[str, Any] | None = None
        by: str | None = None
        # Runs started from an occurrence; runs of older stores have none of these.
        definition: str | None = None
        definition_version: int | None = None
        occurrence_id: UUID | None = None
        verified_by: str | None = None
        verified_at: datetime | None = None

    class PhaseAdvanced(Aggregate.Event):
        phase: int
        by: str | None
        at: datetime

    class Completed(Aggregate.Event):
        at: datetime
        by: str | None = None

    class Cancelled(Aggregate.Event):
        by: str
        cleanup: bool
        at: datetime

    class Aborted(Aggregate.Event):
        reason: str
        at: datetime
        by: str | None = None

    @classmethod
    def start(
        cls,
        run_id: UUID,
        name: str,
        at: datetime,
        spec: dict[str, Any] | None = None,
        by: str | None = None,
        origin: Origin | None = None,
    ) -> Run:
        of = {}
        if origin is not None:
            of = {
                "definition": origin.definition,
                "definition_version": origin.version,
                "occurrence_id": origin.occurrence_id,
                "verified_by": origin.verified_by,
                "verified_at": origin.verified_at,
            }
        return cls._create(cls.Started, id=run_id, name=name, at=at, spec=spec, by=by, **of)

    @event(Started)
    def __init__(
        self,
        name: str,
        at: datetime,
        spec: dict[str, Any] | None = None,
        by: str | None = None,
        definition: str | None = None,
        definition_version: int | None = None,
        occurrence_id: UUID | None = None,
        verified_by: str | None = None,
        verified_at: datetime | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self.started_by = by
        self.origin = (
            None
            if definition is None or definition_version is None or occurrence_id is None
            else Origin(definition, definition_version, occurrence_id, verified_by, verified_at)
        )
        self.status: RunStatus = "running"
        self.started_at = at
        self.ended_at: datetime | None = None
        self.phase = 0
        self.phase_started_at = at

    def advance_phase(self, to: int, by: str | None, at: datetime) -> None:
        """Move to phase ``to``; one past the last phase is not a phase: complete instead."""
        self._guard_running()
        if to != self.phase + 1:
            raise PhaseOutOfOrder(f"run {self.id} is in phase {self.phase}, not {to - 1}")
        self._phase_advanced(phase=to, by=by, at=at)

    @property
    def is_terminal(self) -> bool:
        return ended(self.status)

    def complete(self, at: datetime, by: str | None = None) -> None:
        self._guard_running()
        self._completed(at=at, by=by)

    def cancel(self, by: str, cleanup: bool, at: datetime) -> None:
        self._guard_running()
        self._cancelled(by=by, cleanup=cleanup, at=at)

    def abort(self, reason: str, at: datetime, by: str | None = None) -> None:
        self._guard_running()
        self._aborted(reason=reason, at=at, by=by)

    def _guard_running(self) -> None:
        if self.is_terminal:
            raise RunNotRunning(f"run {self.id} has already ended ({self.status})")

    @event(PhaseAdvanced)
    def _phase_advanced(self, phase: int, by: str | None, at: datetime) -> None:
        self.phase = phase
        self.phase_started_at = at

    @event(Completed)
    def _completed(self, at: datetime, by: str | None = None) -> None:
        self.status = "completed"
        self.ended_at = at

    @event(Cancelled)
    def _cancelled(self, by: str, cleanup: bool, at: datetime) -> None:
        self.status = "cancelled"
        self.ended_at = at

    @event(Aborted)
    def _aborted(self, reason: str, at: datetime, by: str | None = None) -> None:
        self.status = "aborted"
        self.ended_at = at

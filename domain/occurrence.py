"""Occurrences: a definition scheduled at a time, pinned to one of its versions, started exactly
once into a run, or cancelled."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.definition import Stamp, Version, stamp_of
from runledger.domain.errors import DomainError
from runledger.domain.ids import natural_id

OccurrenceState = Literal["scheduled", "started", "cancelled"]


class OccurrenceNotScheduled(DomainError):
    """The occurrence has already started or been cancelled."""


class AlreadyStarted(OccurrenceNotScheduled):
    """The occurrence has already started its run."""


class NotDue(DomainError):
    """The occurrence's time has not come."""


def run_id_for(occurrence_id: UUID) -> UUID:
    """The one run an occurrence may start: however many runners race, or crash between saving
    the run and the occurrence's Started, a second run would collide with the first."""
    return natural_id("occurrence-run", occurrence_id)


class Occurrence(Aggregate):
    class Scheduled(Aggregate.Created):
        definition_id: UUID
        definition: str
        due_at: datetime
        version: int
        verified_by: str | None
        verified_at: datetime | None
        by: str
        at: datetime

    class Repinned(Aggregate.Event):
        version: int
        verified_by: str | None
        verified_at: datetime | None
        by: str
        at: datetime

    class Started(Aggregate.Event):
        run_id: UUID
        by: str
        at: datetime

    class Cancelled(Aggregate.Event):
        by: str
        at: datetime

    @classmethod
    def schedule(
        cls,
        occurrence_id: UUID,
        definition_id: UUID,
        definition: str,
        due_at: datetime,
        pinned: Version,
        by: str,
        at: datetime,
    ) -> Occurrence:
        stamp = pinned.verified
        return cls._create(
            cls.Scheduled,
            id=occurrence_id,
            definition_id=definition_id,
            definition=definition,
            due_at=due_at,
            version=pinned.number,
            verified_by=None if stamp is None else stamp.by,
            verified_at=None if stamp is None else stamp.at,
            by=by,
            at=at,
        )

    @event(Scheduled)
    def __init__(
        self,
        definition_id: UUID,
        definition: str,
        due_at: datetime,
        version: int,
        verified_by: str | None,
        verified_at: datetime | None,
        by: str,
        at: datetime,
    ) -> None:
        self.definition_id = definition_id
        self.definition = definition
        self.due_at = due_at
        self.state: OccurrenceState = "scheduled"
        self.run_id: UUID | None = None
        self._pin(version, verified_by, verified_at)

    @property
    def verified(self) -> Stamp | None:
        return self._verified

    def due(self, now: datetime) -> bool:
        return self.state == "scheduled" and self.due_at <= now

    def repin(self, pinned: Version, by: str, at: datetime) -> None:
        """Pin to ``pinned`` (a newly published version), with its verified stamp."""
        self._guard_scheduled()
        stamp = pinned.verified
        self._repinned(
            version=pinned.number,
            verified_by=None if stamp is None else stamp.by,
            verified_at=None if stamp is None else stamp.at,
            by=by,
            at=at,
        )

    def start(self, by: str, at: datetime) -> UUID:
        """Mark it started; answers the id its run must have."""
        self._guard_scheduled()
        if self.due_at > at:
            raise NotDue(f"occurrence {self.id} is due at {self.due_at:%Y-%m-%d %H:%M:%S} UTC")
        self._started(run_id=run_id_for(self.id), by=by, at=at)
        return run_id_for(self.id)

    def cancel(self, by: str, at: datetime) -> None:
        self._guard_scheduled()
        self._cancelled(by=by, at=at)

    def _guard_scheduled(self) -> None:
        if self.state == "started":
            raise AlreadyStarted(f"occurrence {self.id} already started as run {self.run_id}")
        if self.state == "cancelled":
            raise OccurrenceNotScheduled(f"occurrence {self.id} was cancelled")

    def _pin(self, version: int, verified_by: str | None, verified_at: datetime | None) -> None:
        self.pinned_version = version
        self._verified = stamp_of(verified_by, verified_at)

    @event(Repinned)
    def _repinned(
        self,
        version: int,
        verified_by: str | None,
        verified_at: datetime | None,
        by: str,
        at: datetime,
    ) -> None:
        self._pin(version, verified_by, verified_at)

    @event(Started)
    def _started(self, run_id: UUID, by: str, at: datetime) -> None:
        self.state = "started"
        self.run_id = run_id

    @event(Cancelled)
    def _cancelled(self, by: str, at: datetime) -> None:
        self.state = "cancelled"

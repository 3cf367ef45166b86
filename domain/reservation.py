from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.fate import OPEN
from runledger.domain.ids import natural_id


def holds_target(
    entry_state: str | None, *, run_live: bool, until: datetime | None, now: datetime
) -> bool:
    """SPEC "Leases": a target is held while its lease is live or still being given back (a
    failure a retry or a person may yet undo, a claim in flight, an answer core must still give
    back); a lease that drifted (somebody else's value stands) or was kept no longer holds it.

    ``entry_state`` is the holder's ledger entry for the lease, or None before it has one: then
    only a live run inside its lease's ``until`` holds the target.
    """
    if entry_state is not None:
        return entry_state in OPEN
    return run_live and until is not None and until > now


class Reservation(Aggregate):
    """Who holds one lease target. Its id comes from the target, so two runs racing for one
    target write to one stream, and the store lets exactly one of them win."""

    class Opened(Aggregate.Created):
        lease: str
        target: str

    class Reserved(Aggregate.Event):
        run_id: UUID
        key: str
        until: datetime
        at: datetime

    class Applied(Aggregate.Event):
        baseline: Any
        applied: Any
        at: datetime

    @staticmethod
    def create_id(lease: str, target: str) -> UUID:
        return natural_id("reservation", lease, target)

    @event(Opened)
    def __init__(self, lease: str, target: str) -> None:
        self.lease = lease
        self.target = target
        self.run_id: UUID | None = None
        self.key: str | None = None
        self.until: datetime | None = None
        self.values: tuple[Any, Any] | None = None

    def reserve(self, run_id: UUID, key: str, until: datetime, at: datetime) -> None:
        if self.run_id == run_id and self.key == key:
            return
        self._reserved(run_id=run_id, key=key, until=until, at=at)

    def record_applied(self, baseline: Any, applied: Any, at: datetime) -> None:
        self._applied(baseline=baseline, applied=applied, at=at)

    @event(Reserved)
    def _reserved(self, run_id: UUID, key: str, until: datetime, at: datetime) -> None:
        self.run_id = run_id
        self.key = key
        self.until = until
        self.values = None

    @event(Applied)
    def _applied(self, baseline: Any, applied: Any, at: datetime) -> None:
        self.values = (baseline, applied)

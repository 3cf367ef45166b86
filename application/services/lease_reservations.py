"""Lease reservations: which run holds a target now, and reserving it for a run's step under its
key, against every other live run (SPEC "Leases": one target, one run)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from runledger.application.services.lease_params import LeaseParams
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.reservation import Reservation, holds_target
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND, Resource
from runledger.domain.run import Run
from runledger.domain.step import step_of_key


def get_or_none(app: LedgerApp, aggregate_id: UUID | None) -> object:
    """The aggregate stored under ``aggregate_id``, or None."""
    if aggregate_id is None:
        return None
    try:
        return app.repository.get(aggregate_id)
    except AggregateNotFoundError:
        return None


class Reservations:
    """Who holds each lease target: one run at a time, reserved under a step's key."""

    def __init__(self, *, app: LedgerApp) -> None:
        self.app = app

    def holder(self, lease: str, target: str, now: datetime) -> Reservation | None:
        """The reservation of the run that holds this target now, or None. Reads only: a dry
        run asks it."""
        found = self.by_id(Reservation.create_id(lease, target))
        if found is not None and self._held(found, now):
            return found
        return None

    def reserve(
        self, wanted: LeaseParams, run_id: UUID, key: str, until: datetime, now: datetime
    ) -> Reservation | dict[str, Any]:
        """The target reserved for ``run_id`` under ``key``, or why not (a failed answer)."""
        for _ in range(3):
            reservation = self.load(wanted.lease, wanted.target)
            holder = reservation.run_id
            # A run's own earlier lease holds the target too: a second apply would read that
            # override as its baseline, and no order of restores could then put the true one back.
            mine = holder == run_id and reservation.key == key
            if holder is not None and not mine and self._held(reservation, now):
                return _held_by(wanted.target, holder, reservation.until or now, now)
            reservation.reserve(run_id, key, until, now)
            try:
                self.app.save(reservation)
            except IntegrityError:
                continue  # another runner moved first: look again
            return reservation
        return {"ok": False, "error": f"the target {wanted.target!r} is contended; try again"}

    def load(self, lease: str, target: str) -> Reservation:
        """The target's reservation, new (nobody holds it) when none is stored."""
        try:
            found: object = self.app.repository.get(Reservation.create_id(lease, target))
        except AggregateNotFoundError:
            return Reservation(lease=lease, target=target)
        if not isinstance(found, Reservation):
            raise TypeError(f"{found!r} is not a reservation")
        return found

    def by_id(self, reservation_id: UUID) -> Reservation | None:
        found = get_or_none(self.app, reservation_id)
        return found if isinstance(found, Reservation) else None

    def ever_reserved(self, reservation_id: UUID, key: str) -> bool:
        """Whether the key ever held the target: apply is only called under a key that did.
        Read newest first, and only for a lease step whose answer was lost."""
        events = self.app.repository.event_store.get(reservation_id, desc=True)
        return any(isinstance(e, Reservation.Reserved) and e.key == key for e in events)

    def _held(self, reservation: Reservation, now: datetime) -> bool:
        """Whether the holder's lease still holds the target, so a new run never reads the old
        run's value as its baseline: the rule is ``holds_target``'s."""
        if reservation.run_id is None:
            return False
        step = step_of_key(reservation.key or "")
        ref = f"{reservation.lease}#{reservation.target}"
        entry = get_or_none(self.app, Resource.create_id(reservation.run_id, step, LEASE_KIND, ref))
        if not isinstance(entry, Resource):
            # No answer recorded: the dispatch's placeholder stands for it until given back.
            entry = get_or_none(
                self.app,
                Resource.create_id(
                    reservation.run_id, step, PLACEHOLDER_KIND, reservation.key or ""
                ),
            )
        run = get_or_none(self.app, reservation.run_id)
        return holds_target(
            entry.state if isinstance(entry, Resource) else None,
            run_live=isinstance(run, Run) and not run.is_terminal,
            until=reservation.until,
            now=now,
        )


def _held_by(target: str, holder: UUID, until: datetime, now: datetime) -> dict[str, Any]:
    held = f"the target {target!r} is held by run {holder} until {until:%Y-%m-%d %H:%M:%S} UTC"
    if until <= now:
        held += "; its lease has not been given back yet"
    # Another run's hold ends: the step may try again, unlike a refusal.
    return {"ok": False, "error": held}

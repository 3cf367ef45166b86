from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.modules.answers import ApplyDone, _parse, not_confirmed
from runledger.application.modules.deadline import Outcome, call_with_deadline
from runledger.application.modules.protocol import Registry
from runledger.application.services.lease_params import LeaseParams
from runledger.application.services.lease_reservations import Reservations
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.reservation import Reservation


class LeaseApply:
    """Applying a lease's value through its module under the step's key, and keeping the
    answer (even a late one) on the target's reservation for the restore."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        registry: Registry,
        settings: Settings,
        clock: Callable[[], datetime],
        reservations: Reservations,
    ) -> None:
        self.app = app
        self.registry = registry
        self.settings = settings
        self.clock = clock
        self.reservations = reservations

    def apply(
        self, wanted: LeaseParams, held: Reservation, run_id: str, key: str
    ) -> Reservation | dict[str, Any]:
        """The reservation with the apply's answer kept on it, or why not (a failed answer)."""
        lease, reservation_id = self.registry.leases[wanted.lease], held.id
        outcome = call_with_deadline(
            lease.apply,
            {
                "target": wanted.target,
                "value": wanted.value,
                "run_id": run_id,
                "idempotency_key": key,
            },
            self.settings.default_budget_ms / 1000,
            late=lambda late: self._applied_late(reservation_id, key, late),
            what=f"{wanted.lease}.apply for {key}",
        )
        answer = _parse(ApplyDone, getattr(outcome, "value", None))
        if answer is None:
            why = not_confirmed(outcome, f"{wanted.lease}.apply")
            return {"ok": False, "error": f"{wanted.lease}.apply did not confirm: {why}"}
        if not self._record_applied(held, key, answer):
            held = self.reservations.load(wanted.lease, wanted.target)  # a late answer came first?
            if held.key != key or held.values is None:
                return {"ok": False, "error": f"the target {wanted.target!r} moved; try again"}
        return held

    def _record_applied(self, held: Reservation, key: str, answer: ApplyDone) -> bool:
        """Keep an apply's answer on the reservation, unless one is kept already (the first
        answer under a key stands); answers whether this one was saved."""
        if held.key != key or held.values is not None:
            return False
        held.record_applied(answer.baseline, answer.applied, self.clock())
        try:
            self.app.save(held)
        except IntegrityError:
            return False
        return True

    def _applied_late(self, reservation_id: UUID, key: str, outcome: Outcome) -> None:
        """An apply abandoned at its deadline answered after all: its baseline is what the
        key found, so it is kept for the restore, if none is kept yet."""
        answer = _parse(ApplyDone, getattr(outcome, "value", None))
        found = self.reservations.by_id(reservation_id)
        if answer is not None and found is not None:
            self._record_applied(found, key, answer)

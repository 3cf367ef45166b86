from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from runledger.application.modules.answers import Verdict
from runledger.application.modules.protocol import Action, Registry
from runledger.application.services.lease_apply import LeaseApply
from runledger.application.services.lease_give_back import UnansweredLeaseGiveBack
from runledger.application.services.lease_params import LeaseParams
from runledger.application.services.lease_reservations import Reservations
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.reservation import Reservation
from runledger.domain.resource import LEASE_KIND, MAX_REF
from runledger.domain.values import plain_message

__all__ = ["CORE_LEASE", "CoreLease", "LeaseParams", "refused"]

CORE_LEASE = "core.lease"


def refused(error: str) -> dict[str, Any]:
    return {"ok": False, "retry": False, "error": error}


def granted(wanted: LeaseParams, held: Reservation, until: datetime) -> dict[str, Any]:
    """The answer of a lease that holds its target: one lease resource to give back."""
    baseline, applied = held.values or (None, None)
    return {
        "ok": True,
        "resources": [
            {
                "kind": LEASE_KIND,
                "ref": f"{wanted.lease}#{wanted.target}",
                "payload": {"baseline": baseline, "applied": applied},
                "until": until,
            }
        ],
    }


class CoreLease:
    """Core's own action: the bound on a lease and the one-target-one-run rule live here,
    on core's side of the seam, rather than once per module."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        registry: Registry,
        settings: Settings,
        clock: Callable[[], datetime],
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.clock = clock
        self.reservations = Reservations(app=app)
        self.applying = LeaseApply(
            app=app,
            registry=registry,
            settings=settings,
            clock=clock,
            reservations=self.reservations,
        )
        self.giving_back = UnansweredLeaseGiveBack(
            app=app, registry=registry, reservations=self.reservations
        )

    @property
    def action(self) -> Action:
        return Action(CORE_LEASE, "core", perform=self.perform)

    def check(
        self, params: dict[str, Any], elsewhere: Callable[[str], bool] = lambda _: False
    ) -> str | None:
        """Why these params can never succeed, or None. A lease this process has not loaded
        is known if a live runner ``elsewhere`` serves it."""
        try:
            wanted = LeaseParams.model_validate(params)
        except ValidationError as error:
            first = error.errors()[0]
            return f"params.{'.'.join(str(p) for p in first['loc'])}: {plain_message(first)}"
        if wanted.lease not in self.registry.leases and not elsewhere(wanted.lease):
            return f'no module registers the lease "{wanted.lease}"'
        if len(f"{wanted.lease}#{wanted.target}") > MAX_REF:
            return f"the lease ref {wanted.lease}#{wanted.target} is over {MAX_REF} characters"
        if wanted.duration_s > self.settings.lease_max_s:
            return (
                f"a lease may last at most {self.settings.lease_max_s}s "
                f"(EVENT_LEASE_MAX_S); {wanted.duration_s:g}s was asked"
            )
        return None

    def perform(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        problem = self.check(params)
        if problem:
            return refused(problem)
        wanted = LeaseParams.model_validate(params)
        now = self.clock()
        until = now + timedelta(seconds=wanted.duration_s)
        held = self.reservations.reserve(wanted, UUID(run_id), idempotency_key, until, now)
        if not isinstance(held, dict) and held.values is None:
            held = self.applying.apply(wanted, held, run_id, idempotency_key)
        return held if isinstance(held, dict) else granted(wanted, held, until)

    def give_back_unanswered(self, run_id: UUID, step: str, key: str, seconds: float) -> Verdict:
        """A core.lease step whose answer never reached the ledger, given back by its key
        (see ``UnansweredLeaseGiveBack.give_back``)."""
        return self.giving_back.give_back(run_id, step, key, seconds)

    def holder(self, lease: str, target: str, now: datetime) -> Reservation | None:
        """The reservation of the run that holds this target now, or None. Reads only: a dry
        run asks it."""
        return self.reservations.holder(lease, target, now)

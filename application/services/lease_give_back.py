from __future__ import annotations

from uuid import UUID

from runledger.application.modules.answers import Verdict, classify_restore, classify_revert
from runledger.application.modules.deadline import call_with_deadline
from runledger.application.modules.protocol import Registry
from runledger.application.services.lease_reservations import Reservations, get_or_none
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.reservation import Reservation
from runledger.domain.run import Run
from runledger.domain.spec import RunSpec


class UnansweredLeaseGiveBack:
    """Giving back a core.lease step whose answer never reached the ledger: the module is
    asked to restore by the step's key."""

    def __init__(self, *, app: LedgerApp, registry: Registry, reservations: Reservations) -> None:
        self.app = app
        self.registry = registry
        self.reservations = reservations

    def give_back(self, run_id: UUID, step: str, key: str, seconds: float) -> Verdict:
        """Its apply may have taken effect all the same (answered late, or its runner died
        before saving the answer), so the module is always asked to restore by the key: with
        what core's reservation recorded under it, or with nothing, and then the module's own
        record of the key says what to put back ("ok" if it applied nothing). Either way the
        key is ended."""
        run = get_or_none(self.app, run_id)
        if not isinstance(run, Run) or run.spec is None:
            return Verdict("terminal", "core.lease ran outside a spec; its target is unknown")
        params = RunSpec.stored(run.spec).step(step)[1].params
        lease_id, target = str(params.get("lease")), str(params.get("target"))
        lease = self.registry.leases.get(lease_id)
        if lease is None:
            return Verdict("terminal", f'no module registers the lease "{lease_id}"')
        reservation_id = Reservation.create_id(lease_id, target)
        found = self.reservations.by_id(reservation_id)
        known = found.values if found is not None and found.key == key else None
        if known is None and not self.reservations.ever_reserved(reservation_id, key):
            return Verdict("done")  # core never called apply under this key
        baseline, applied = known or (None, None)
        outcome = call_with_deadline(
            lease.restore,
            {
                "baseline": baseline,
                "expected": applied,
                "run_id": str(run_id),
                "target": target,
                "idempotency_key": key,
            },
            seconds,
            what=f"{lease_id}.restore for {key}",
        )
        what = f"{lease_id}#{target}"
        # Without a known baseline, no current value can be read as "already restored".
        return (
            classify_restore(outcome, what, baseline) if known else classify_revert(outcome, what)
        )

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runledger.application.modules.answers import (
    ApplyDone,
    Verdict,
    _parse,
    classify_restore,
    classify_revert,
    not_confirmed,
)
from runledger.application.modules.deadline import Outcome, call_with_deadline
from runledger.application.modules.protocol import Action, Registry
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.reservation import Reservation, holds_target
from runledger.domain.resource import LEASE_KIND, MAX_REF, PLACEHOLDER_KIND, Resource
from runledger.domain.run import Run
from runledger.domain.spec import RunSpec
from runledger.domain.step import step_of_key
from runledger.domain.values import plain_message

CORE_LEASE = "core.lease"


class LeaseParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    lease: str = Field(min_length=1)
    target: str = Field(min_length=1, max_length=120)
    value: Any
    duration_s: float = Field(gt=0)


def refused(error: str) -> dict[str, Any]:
    return {"ok": False, "retry": False, "error": error}


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
        self.app = app
        self.registry = registry
        self.settings = settings
        self.clock = clock

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
        held = self._reserve(wanted, UUID(run_id), idempotency_key, until, now)
        if isinstance(held, dict):
            return held
        if held.values is None:
            lease, reservation_id = self.registry.leases[wanted.lease], held.id
            outcome = call_with_deadline(
                lease.apply,
                {
                    "target": wanted.target,
                    "value": wanted.value,
                    "run_id": run_id,
                    "idempotency_key": idempotency_key,
                },
                self.settings.default_budget_ms / 1000,
                late=lambda late: self._applied_late(reservation_id, idempotency_key, late),
                what=f"{wanted.lease}.apply for {idempotency_key}",
            )
            answer = _parse(ApplyDone, getattr(outcome, "value", None))
            if answer is None:
                why = not_confirmed(outcome, f"{wanted.lease}.apply")
                return {"ok": False, "error": f"{wanted.lease}.apply did not confirm: {why}"}
            if not self._record_applied(held, idempotency_key, answer):
                held = self._load(wanted.lease, wanted.target)  # a late answer came first?
                if held.key != idempotency_key or held.values is None:
                    return {"ok": False, "error": f"the target {wanted.target!r} moved; try again"}
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

    def give_back_unanswered(self, run_id: UUID, step: str, key: str, seconds: float) -> Verdict:
        """A core.lease step whose answer never reached the ledger. Its apply may have taken
        effect all the same (answered late, or its runner died before saving the answer), so
        the module is always asked to restore by the key: with what core's reservation
        recorded under it, or with nothing, and then the module's own record of the key says
        what to put back ("ok" if it applied nothing). Either way the key is ended."""
        run = self._get(run_id)
        if not isinstance(run, Run) or run.spec is None:
            return Verdict("terminal", "core.lease ran outside a spec; its target is unknown")
        params = RunSpec.stored(run.spec).step(step)[1].params
        lease_id, target = str(params.get("lease")), str(params.get("target"))
        lease = self.registry.leases.get(lease_id)
        if lease is None:
            return Verdict("terminal", f'no module registers the lease "{lease_id}"')
        reservation_id = Reservation.create_id(lease_id, target)
        found = self._get(reservation_id)
        known = found.values if isinstance(found, Reservation) and found.key == key else None
        if known is None and not self._ever_reserved(reservation_id, key):
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

    def _ever_reserved(self, reservation_id: UUID, key: str) -> bool:
        """Whether the key ever held the target: apply is only called under a key that did.
        Read newest first, and only for a lease step whose answer was lost."""
        events = self.app.repository.event_store.get(reservation_id, desc=True)
        return any(isinstance(e, Reservation.Reserved) and e.key == key for e in events)

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
        found = self._get(reservation_id)
        if answer is not None and isinstance(found, Reservation):
            self._record_applied(found, key, answer)

    def holder(self, lease: str, target: str, now: datetime) -> Reservation | None:
        """The reservation of the run that holds this target now, or None. Reads only: a dry
        run asks it."""
        found = self._get(Reservation.create_id(lease, target))
        if isinstance(found, Reservation) and self._held(found, now):
            return found
        return None

    def _reserve(
        self, wanted: LeaseParams, run_id: UUID, key: str, until: datetime, now: datetime
    ) -> Reservation | dict[str, Any]:
        for _ in range(3):
            reservation = self._load(wanted.lease, wanted.target)
            holder = reservation.run_id
            # A run's own earlier lease holds the target too: a second apply would read that
            # override as its baseline, and no order of restores could then put the true one back.
            mine = holder == run_id and reservation.key == key
            if holder is not None and not mine and self._held(reservation, now):
                until = reservation.until or now
                held = (
                    f"the target {wanted.target!r} is held by run {holder} "
                    f"until {until:%Y-%m-%d %H:%M:%S} UTC"
                )
                if until <= now:
                    held += "; its lease has not been given back yet"
                # Another run's hold ends: the step may try again, unlike a refusal.
                return {"ok": False, "error": held}
            reservation.reserve(run_id, key, until, now)
            try:
                self.app.save(reservation)
            except IntegrityError:
                continue  # another runner moved first: look again
            return reservation
        return {"ok": False, "error": f"the target {wanted.target!r} is contended; try again"}

    def _load(self, lease: str, target: str) -> Reservation:
        try:
            found: object = self.app.repository.get(Reservation.create_id(lease, target))
        except AggregateNotFoundError:
            return Reservation(lease=lease, target=target)
        if not isinstance(found, Reservation):
            raise TypeError(f"{found!r} is not a reservation")
        return found

    def _held(self, reservation: Reservation, now: datetime) -> bool:
        """Whether the holder's lease still holds the target, so a new run never reads the old
        run's value as its baseline: the rule is ``holds_target``'s."""
        if reservation.run_id is None:
            return False
        step = step_of_key(reservation.key or "")
        ref = f"{reservation.lease}#{reservation.target}"
        entry = self._get(Resource.create_id(reservation.run_id, step, LEASE_KIND, ref))
        if not isinstance(entry, Resource):
            # No answer recorded: the dispatch's placeholder stands for it until given back.
            entry = self._get(
                Resource.create_id(
                    reservation.run_id, step, PLACEHOLDER_KIND, reservation.key or ""
                )
            )
        run = self._get(reservation.run_id)
        return holds_target(
            entry.state if isinstance(entry, Resource) else None,
            run_live=isinstance(run, Run) and not run.is_terminal,
            until=reservation.until,
            now=now,
        )

    def _get(self, aggregate_id: UUID | None) -> object:
        if aggregate_id is None:
            return None
        try:
            return self.app.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import (
    AlreadyResolved,
    NotAPlaceholder,
    NotClaimable,
    NotClaimHolder,
)
from runledger.domain.fate import Fate, State
from runledger.domain.ids import natural_id

PLACEHOLDER_KIND = "@step"
LEASE_KIND = "override"
MAX_KIND = 64
MAX_REF = 190

FailureMode = Literal["retry", "terminal"]


class Resource(Aggregate):
    """One ledger entry: something a run created or changed in the world, and its fate."""

    class Recorded(Aggregate.Created):
        run_id: UUID
        step: str
        kind: str
        ref: str
        module: str
        action: str | None
        idempotency_key: str
        payload: dict[str, Any] | None
        member_key: str | None
        until: datetime | None
        at: datetime

    # Each event moves the entry's fate in its own ``apply``, triggered directly by the command
    # that checked it: the library's ``@event`` methods cost more an event (matching the
    # method's parameters to the event's fields, twice), the sweep's largest domain cost
    # (scripts/MEASUREMENTS.md, "Events applied in their own apply").
    class Superseded(Aggregate.Event):
        at: datetime

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.superseded()

    class RevertClaimed(Aggregate.Event):
        attempt: int
        worker: str
        expires_at: datetime
        at: datetime

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.claimed(self.attempt, self.worker, self.expires_at)

    class Reverted(Aggregate.Event):
        attempt: int
        at: datetime
        note: str | None = None

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.reverted()
            aggregate.note = self.note

    class RevertFailed(Aggregate.Event):
        attempt: int
        mode: str
        error: str
        at: datetime
        next_attempt_at: datetime | None = None

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.failed(self.mode, self.error, self.next_attempt_at)

    class Drifted(Aggregate.Event):
        attempt: int
        current: Any
        error: str
        at: datetime

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.drifted(self.current, self.error)

    class Orphaned(Aggregate.Event):
        reason: str
        at: datetime

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.orphaned(self.reason)

    class Expired(Aggregate.Event):
        reason: str
        at: datetime

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.expired()

    class AttemptsReset(Aggregate.Event):
        by: str
        at: datetime

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.attempts_reset()

    class Kept(Aggregate.Event):
        by: str
        at: datetime
        reason: str | None = None  # a cancel without cleanup gives none; older streams lack it

        def apply(self, aggregate: Resource) -> None:
            aggregate.fate = aggregate.fate.kept()
            aggregate.kept_by = self.by
            aggregate.kept_reason = self.reason

    @staticmethod
    def create_id(run_id: UUID, step: str, kind: str, ref: str) -> UUID:
        return natural_id("resource", run_id, step, kind, ref)

    @event(Recorded)
    def __init__(
        self,
        run_id: UUID,
        step: str,
        kind: str,
        ref: str,
        module: str,
        action: str | None,
        idempotency_key: str,
        payload: dict[str, Any] | None,
        member_key: str | None,
        until: datetime | None,
        at: datetime,
    ) -> None:
        self.run_id = run_id
        self.step = step
        self.kind = kind
        self.ref = ref
        self.module = module
        self.action = action
        self.idempotency_key = idempotency_key
        self.payload = payload
        self.member_key = member_key
        self.until = until
        self.fate = Fate.recorded(placeholder=self.is_placeholder)
        self.kept_by: str | None = None
        self.kept_reason: str | None = None
        self.note: str | None = None

    @property
    def is_placeholder(self) -> bool:
        return self.kind == PLACEHOLDER_KIND

    @property
    def is_lease(self) -> bool:
        return self.kind == LEASE_KIND

    # The fate's fields, read where callers have always read them; only an event changes them.
    @property
    def state(self) -> State:
        return self.fate.state

    @property
    def attempts(self) -> int:
        return self.fate.attempts

    @property
    def terminal(self) -> bool:
        return self.fate.terminal

    @property
    def claim_worker(self) -> str | None:
        return self.fate.claim_worker

    @property
    def claim_expires_at(self) -> datetime | None:
        return self.fate.claim_expires_at

    @property
    def next_attempt_at(self) -> datetime | None:
        return self.fate.next_attempt_at

    @property
    def last_error(self) -> str | None:
        return self.fate.last_error

    @property
    def drift_current(self) -> Any:
        return self.fate.drift_current

    @property
    def unresolved(self) -> bool:
        return self.fate.unresolved

    def under_live_claim(self, now: datetime) -> bool:
        return self.fate.under_live_claim(now)

    def retryable(self, now: datetime, max_attempts: int) -> bool:
        return self.fate.retryable(now, max_attempts)

    def still_open(self, now: datetime, max_attempts: int) -> bool:
        return self.fate.still_open(now, max_attempts)

    def supersede(self, at: datetime) -> None:
        if not self.is_placeholder or not self.unresolved:
            raise NotAPlaceholder(f"{self.kind}:{self.ref} is {self.state}, not a placeholder")
        self.trigger_event(self.Superseded, at=at)

    def claim_revert(
        self, worker: str, at: datetime, expires_at: datetime, max_attempts: int
    ) -> None:
        if not self.retryable(at, max_attempts):
            why = self.fate.why_not_retryable(at, max_attempts)
            raise NotClaimable(f"{self.kind}:{self.ref} {why}")
        self.trigger_event(
            self.RevertClaimed,
            attempt=self.attempts + 1,
            worker=worker,
            expires_at=expires_at,
            at=at,
        )

    def mark_reverted(
        self, worker: str, attempt: int, at: datetime, note: str | None = None
    ) -> None:
        self._guard_claim(worker, attempt)
        self.trigger_event(self.Reverted, attempt=attempt, at=at, note=note)

    def fail_revert(
        self,
        worker: str,
        attempt: int,
        mode: FailureMode,
        error: str,
        at: datetime,
        next_attempt_at: datetime | None = None,
    ) -> None:
        """A failed attempt; ``next_attempt_at`` is when a retry may start (never for a
        terminal failure, which waits for a person)."""
        self._guard_claim(worker, attempt)
        self.trigger_event(
            self.RevertFailed,
            attempt=attempt,
            mode=mode,
            error=error,
            at=at,
            next_attempt_at=None if mode == "terminal" else next_attempt_at,
        )

    def mark_drifted(
        self, worker: str, attempt: int, current: Any, error: str, at: datetime
    ) -> None:
        self._guard_claim(worker, attempt)
        self.trigger_event(self.Drifted, attempt=attempt, current=current, error=error, at=at)

    def orphan(self, reason: str, at: datetime) -> None:
        self._guard_named_and_unresolved()
        self.trigger_event(self.Orphaned, reason=reason, at=at)

    def expire(self, reason: str, at: datetime) -> None:
        self._guard_named_and_unresolved()
        self.trigger_event(self.Expired, reason=reason, at=at)

    def reset_attempts(self, by: str, at: datetime) -> None:
        self._guard_unresolved()
        self.trigger_event(self.AttemptsReset, by=by, at=at)

    def keep(self, by: str, at: datetime, reason: str | None = None) -> None:
        """A person leaves it in the world as it is. Not while a worker's call is out on it:
        that call's verdict says what the world now holds."""
        self._guard_unresolved()
        if self.under_live_claim(at):
            raise NotClaimable(
                f"{self.kind}:{self.ref} is being given back by {self.claim_worker} until "
                f"{self.claim_expires_at}; keep it once that attempt has answered"
            )
        self.trigger_event(self.Kept, by=by, at=at, reason=reason)

    def _guard_claim(self, worker: str, attempt: int) -> None:
        if self.claim_worker != worker or self.attempts != attempt or not self.unresolved:
            raise NotClaimHolder(
                f"{self.kind}:{self.ref}: {worker} does not hold attempt {attempt}"
            )

    def _guard_unresolved(self) -> None:
        if not self.unresolved:
            raise AlreadyResolved(f"{self.kind}:{self.ref} is already {self.state}")

    def _guard_named_and_unresolved(self) -> None:
        self._guard_unresolved()
        if self.is_placeholder:
            raise NotAPlaceholder(f"{self.ref} is a placeholder, not a named resource")

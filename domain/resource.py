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
from runledger.domain.ids import natural_id

PLACEHOLDER_KIND = "@step"
LEASE_KIND = "override"
MAX_KIND = 64
MAX_REF = 190

State = Literal[
    "placeholder",
    "live",
    "superseded",
    "reverted",
    "failing",
    "drifted",
    "orphaned",
    "expired",
    "kept",
]
UNRESOLVED: frozenset[str] = frozenset({"placeholder", "live", "failing", "drifted", "orphaned"})
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

    class Superseded(Aggregate.Event):
        at: datetime

    class RevertClaimed(Aggregate.Event):
        attempt: int
        worker: str
        expires_at: datetime
        at: datetime

    class Reverted(Aggregate.Event):
        attempt: int
        at: datetime
        note: str | None = None

    class RevertFailed(Aggregate.Event):
        attempt: int
        mode: str
        error: str
        at: datetime
        next_attempt_at: datetime | None = None

    class Drifted(Aggregate.Event):
        attempt: int
        current: Any
        error: str
        at: datetime

    class Orphaned(Aggregate.Event):
        reason: str
        at: datetime

    class Expired(Aggregate.Event):
        reason: str
        at: datetime

    class AttemptsReset(Aggregate.Event):
        by: str
        at: datetime

    class Kept(Aggregate.Event):
        by: str
        at: datetime

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
        self.state: State = "placeholder" if kind == PLACEHOLDER_KIND else "live"
        self.attempts = 0
        self.terminal = False
        self.claim_worker: str | None = None
        self.claim_expires_at: datetime | None = None
        self.last_error: str | None = None
        self.drift_current: Any = None
        self.kept_by: str | None = None
        self.next_attempt_at: datetime | None = None
        self.note: str | None = None

    @property
    def is_placeholder(self) -> bool:
        return self.kind == PLACEHOLDER_KIND

    @property
    def is_lease(self) -> bool:
        return self.kind == LEASE_KIND

    @property
    def unresolved(self) -> bool:
        return self.state in UNRESOLVED

    def under_live_claim(self, now: datetime) -> bool:
        return self.claim_expires_at is not None and self.claim_expires_at > now

    def due(self, now: datetime) -> bool:
        """Whether the back-off after its last failure has passed."""
        return self.next_attempt_at is None or self.next_attempt_at <= now

    def retryable(self, now: datetime, max_attempts: int) -> bool:
        """SPEC's rule: may automatic cleanup attempt this entry now?"""
        return (
            self.unresolved
            and self.state != "drifted"
            and not self.terminal
            and self.attempts < max_attempts
            and not self.under_live_claim(now)
            and self.due(now)
        )

    def supersede(self, at: datetime) -> None:
        if not self.is_placeholder or not self.unresolved:
            raise NotAPlaceholder(f"{self.kind}:{self.ref} is {self.state}, not a placeholder")
        self._superseded(at=at)

    def still_open(self, now: datetime, max_attempts: int) -> bool:
        """Work automatic cleanup may still do: retryable now or after its back-off, or an
        attempt in flight. A run with such an entry is ``pending``."""
        if not self.unresolved or self.state == "drifted" or self.terminal:
            return False
        return self.attempts < max_attempts or self.under_live_claim(now)

    def claim_revert(
        self, worker: str, at: datetime, expires_at: datetime, max_attempts: int
    ) -> None:
        if not self.retryable(at, max_attempts):
            raise NotClaimable(self._why_not_claimable(at, max_attempts))
        self._revert_claimed(attempt=self.attempts + 1, worker=worker, expires_at=expires_at, at=at)

    def mark_reverted(
        self, worker: str, attempt: int, at: datetime, note: str | None = None
    ) -> None:
        self._guard_claim(worker, attempt)
        self._reverted(attempt=attempt, at=at, note=note)

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
        self._revert_failed(
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
        self._drifted(attempt=attempt, current=current, error=error, at=at)

    def orphan(self, reason: str, at: datetime) -> None:
        self._guard_named_and_unresolved()
        self._orphaned(reason=reason, at=at)

    def expire(self, reason: str, at: datetime) -> None:
        self._guard_named_and_unresolved()
        self._expired(reason=reason, at=at)

    def reset_attempts(self, by: str, at: datetime) -> None:
        self._guard_unresolved()
        self._attempts_reset(by=by, at=at)

    def keep(self, by: str, at: datetime) -> None:
        self._guard_unresolved()
        self._kept(by=by, at=at)

    def _why_not_claimable(self, now: datetime, max_attempts: int) -> str:
        name = f"{self.kind}:{self.ref}"
        if not self.unresolved:
            return f"{name} is {self.state}"
        if self.state == "drifted":
            return f"{name} drifted; only a person can ask again"
        if self.terminal:
            return f"{name} failed terminally; only a person can ask again"
        if self.attempts >= max_attempts:
            return f"{name} has used its {max_attempts} attempts"
        if not self.due(now):
            return f"{name} waits until {self.next_attempt_at} for its next attempt"
        return f"{name} is claimed by {self.claim_worker} until {self.claim_expires_at}"

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

    @event(Superseded)
    def _superseded(self, at: datetime) -> None:
        self.state = "superseded"

    @event(RevertClaimed)
    def _revert_claimed(
        self, attempt: int, worker: str, expires_at: datetime, at: datetime
    ) -> None:
        self.attempts = attempt
        self.claim_worker = worker
        self.claim_expires_at = expires_at
        self.next_attempt_at = None

    @event(Reverted)
    def _reverted(self, attempt: int, at: datetime, note: str | None = None) -> None:
        self.state = "reverted"
        self.note = note
        self._release()

    @event(RevertFailed)
    def _revert_failed(
        self,
        attempt: int,
        mode: str,
        error: str,
        at: datetime,
        next_attempt_at: datetime | None = None,
    ) -> None:
        self.state = "failing"
        self.terminal = mode == "terminal"
        self.last_error = error
        self._release()
        self.next_attempt_at = next_attempt_at

    @event(Drifted)
    def _drifted(self, attempt: int, current: Any, error: str, at: datetime) -> None:
        self.state = "drifted"
        self.drift_current = current
        self.last_error = error
        self._release()

    @event(Orphaned)
    def _orphaned(self, reason: str, at: datetime) -> None:
        self.state = "orphaned"
        self.last_error = reason

    @event(Expired)
    def _expired(self, reason: str, at: datetime) -> None:
        self.state = "expired"
        self._release()

    @event(AttemptsReset)
    def _attempts_reset(self, by: str, at: datetime) -> None:
        # A person asking again is the one thing that lifts a terminal failure or a drift.
        self.attempts = 0
        self.terminal = False
        self.next_attempt_at = None
        if self.state == "drifted":
            self.state = "failing"
        self._release()

    @event(Kept)
    def _kept(self, by: str, at: datetime) -> None:
        self.state = "kept"
        self.kept_by = by
        self._release()

    def _release(self) -> None:
        self.claim_worker = None
        self.claim_expires_at = None

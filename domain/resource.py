from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain import entry_guards as guards
from runledger.domain.entry_view import EntryView
from runledger.domain.fate import Fate
from runledger.domain.ids import natural_id

PLACEHOLDER_KIND = "@step"
LEASE_KIND = "override"
MAX_KIND = 64
MAX_REF = 190

FailureMode = Literal["retry", "terminal"]


class Resource(EntryView, Aggregate):
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

    def supersede(self, at: datetime) -> None:
        guards.require_open_placeholder(self)
        self.trigger_event(self.Superseded, at=at)

    def claim_revert(
        self, worker: str, at: datetime, expires_at: datetime, max_attempts: int
    ) -> None:
        guards.require_retryable(self, at, max_attempts)
        attempt = self.attempts + 1
        self.trigger_event(
            self.RevertClaimed, attempt=attempt, worker=worker, expires_at=expires_at, at=at
        )

    def mark_reverted(
        self, worker: str, attempt: int, at: datetime, note: str | None = None
    ) -> None:
        guards.require_holder(self, worker, attempt)
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
        guards.require_holder(self, worker, attempt)
        after = None if mode == "terminal" else next_attempt_at
        self.trigger_event(
            self.RevertFailed, attempt=attempt, mode=mode, error=error, at=at, next_attempt_at=after
        )

    def mark_drifted(
        self, worker: str, attempt: int, current: Any, error: str, at: datetime
    ) -> None:
        guards.require_holder(self, worker, attempt)
        self.trigger_event(self.Drifted, attempt=attempt, current=current, error=error, at=at)

    def orphan(self, reason: str, at: datetime) -> None:
        guards.require_named_and_unresolved(self)
        self.trigger_event(self.Orphaned, reason=reason, at=at)

    def expire(self, reason: str, at: datetime) -> None:
        guards.require_named_and_unresolved(self)
        self.trigger_event(self.Expired, reason=reason, at=at)

    def reset_attempts(self, by: str, at: datetime) -> None:
        guards.require_unresolved(self)
        self.trigger_event(self.AttemptsReset, by=by, at=at)

    def keep(self, by: str, at: datetime, reason: str | None = None) -> None:
        """A person leaves it in the world as it is."""
        guards.require_unresolved(self)
        guards.require_no_call_out(self, at)
        self.trigger_event(self.Kept, by=by, at=at, reason=reason)

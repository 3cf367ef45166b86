from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain import turns
from runledger.domain.errors import DomainError
from runledger.domain.ids import natural_id

MAX_STEP_ATTEMPTS = 3
StepState = Literal["waiting", "done", "gave_up"]


def gives_up(attempt: int, final: bool) -> bool:
    """Whether a failed attempt ends the step: the module said retrying cannot help, or it was
    the last attempt."""
    return final or attempt >= MAX_STEP_ATTEMPTS


def step_of_key(idempotency_key: str) -> str:
    """The step id an idempotency key names (``<run>:<step>``, as ``Step.idempotency_key``)."""
    return idempotency_key.partition(":")[2]


class NotDispatchable(DomainError):
    """The step cannot be dispatched now."""


class Step(Aggregate):
    """One action call inside a phase. Its idempotency key is the same on every attempt."""

    class Planned(Aggregate.Created):
        run_id: UUID
        step_id: str
        phase: int
        action: str
        params: dict[str, Any]
        at: datetime

    class DispatchClaimed(Aggregate.Event):
        attempt: int
        worker: str
        expires_at: datetime
        at: datetime

    class Succeeded(Aggregate.Event):
        run_id: UUID
        step_id: str
        attempt: int
        entries: int
        at: datetime

    class Failed(Aggregate.Event):
        run_id: UUID
        step_id: str
        attempt: int
        error: str
        at: datetime
        final: bool = False
        next_attempt_at: datetime | None = None

    @staticmethod
    def create_id(run_id: UUID, step_id: str) -> UUID:
        return natural_id("step", run_id, step_id)

    @event(Planned)
    def __init__(
        self,
        run_id: UUID,
        step_id: str,
        phase: int,
        action: str,
        params: dict[str, Any],
        at: datetime,
    ) -> None:
        self.run_id = run_id
        self.step_id = step_id
        self.phase = phase
        self.action = action
        self.params = params
        self.attempts = 0
        self.state: StepState = "waiting"
        self.claim_worker: str | None = None
        self.claim_expires_at: datetime | None = None
        self.last_error: str | None = None
        self.done_at: datetime | None = None
        self.next_attempt_at: datetime | None = None

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}:{self.step_id}"

    def under_live_claim(self, now: datetime) -> bool:
        return turns.claim_live(self.claim_expires_at, now)

    def due(self, now: datetime) -> bool:
        """Whether the back-off after its last failure has passed."""
        return turns.due(self.next_attempt_at, now)

    def dispatchable(self, now: datetime) -> bool:
        return (
            self.state == "waiting"
            and self.attempts < MAX_STEP_ATTEMPTS
            and not self.under_live_claim(now)
            and self.due(now)
        )

    def claim_dispatch(self, worker: str, at: datetime, expires_at: datetime) -> None:
        if not self.dispatchable(at):
            raise NotDispatchable(f"step {self.step_id} is {self.state}, attempt {self.attempts}")
        self._claimed(attempt=self.attempts + 1, worker=worker, expires_at=expires_at, at=at)

    def succeed(self, worker: str, entries: int, at: datetime) -> None:
        self._guard_holder(worker)
        self._succeeded(
            run_id=self.run_id,
            step_id=self.step_id,
            attempt=self.attempts,
            entries=entries,
            at=at,
        )

    def fail(
        self,
        worker: str,
        error: str,
        at: datetime,
        *,
        final: bool = False,
        next_attempt_at: datetime | None = None,
    ) -> None:
        """A failed attempt; ``final`` when the module said retrying cannot help, else
        ``next_attempt_at`` is when the next attempt may start."""
        self._guard_holder(worker)
        self._failed(
            run_id=self.run_id,
            step_id=self.step_id,
            attempt=self.attempts,
            error=error,
            at=at,
            final=final,
            next_attempt_at=None if final else next_attempt_at,
        )

    def abandon(self, at: datetime) -> None:
        """Every attempt was claimed and none answered: the step cannot succeed any more."""
        if self.state != "waiting" or self.attempts < MAX_STEP_ATTEMPTS:
            raise NotDispatchable(f"step {self.step_id} still has attempts left")
        if self.under_live_claim(at):
            raise NotDispatchable(f"step {self.step_id} is still being dispatched")
        self._failed(
            run_id=self.run_id,
            step_id=self.step_id,
            attempt=self.attempts,
            error=f"no answer after {self.attempts} attempts",
            at=at,
        )

    @property
    def gave_up(self) -> bool:
        return self.state == "gave_up"

    def _guard_holder(self, worker: str) -> None:
        if self.claim_worker != worker or self.state != "waiting":
            raise NotDispatchable(f"{worker} does not hold step {self.step_id}")

    @event(DispatchClaimed)
    def _claimed(self, attempt: int, worker: str, expires_at: datetime, at: datetime) -> None:
        self.attempts = attempt
        self.claim_worker = worker
        self.claim_expires_at = expires_at
        self.next_attempt_at = None

    @event(Succeeded)
    def _succeeded(
        self, run_id: UUID, step_id: str, attempt: int, entries: int, at: datetime
    ) -> None:
        self.state = "done"
        self.done_at = at
        self.claim_worker = None
        self.claim_expires_at = None

    @event(Failed)
    def _failed(
        self,
        run_id: UUID,
        step_id: str,
        attempt: int,
        error: str,
        at: datetime,
        final: bool = False,
        next_attempt_at: datetime | None = None,
    ) -> None:
        self.last_error = error
        self.claim_worker = None
        self.claim_expires_at = None
        self.next_attempt_at = next_attempt_at
        if gives_up(attempt, final):
            self.state = "gave_up"

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain import step_guards as guards
from runledger.domain.ids import natural_id
from runledger.domain.step_view import StepView

MAX_STEP_ATTEMPTS = 3
StepState = Literal["waiting", "done", "gave_up"]


def gives_up(attempt: int, final: bool) -> bool:
    """Whether a failed attempt ends the step: the module said retrying cannot help, or it was
    the last attempt."""
    return final or attempt >= MAX_STEP_ATTEMPTS


def step_of_key(idempotency_key: str) -> str:
    """The step id an idempotency key names (``<run>:<step>``, as ``Step.idempotency_key``)."""
    return idempotency_key.partition(":")[2]


class Step(StepView, Aggregate):
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

    def dispatchable(self, now: datetime) -> bool:
        return (
            self.state == "waiting"
            and self.attempts < MAX_STEP_ATTEMPTS
            and not self.under_live_claim(now)
            and self.due(now)
        )

    def claim_dispatch(self, worker: str, at: datetime, expires_at: datetime) -> None:
        guards.require_dispatchable(self, at)
        self._claimed(attempt=self.attempts + 1, worker=worker, expires_at=expires_at, at=at)

    def succeed(self, worker: str, entries: int, at: datetime) -> None:
        guards.require_holder(self, worker)
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
        guards.require_holder(self, worker)
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
        guards.require_spent(self, at, MAX_STEP_ATTEMPTS)
        self._failed(
            run_id=self.run_id,
            step_id=self.step_id,
            attempt=self.attempts,
            error=f"no answer after {self.attempts} attempts",
            at=at,
        )

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

"""What a step refuses, and why: the checks ``Step``'s commands make before any event, each
raising ``NotDispatchable`` with the step and the rule it fails."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from runledger.domain.errors import DomainError

if TYPE_CHECKING:
    from runledger.domain.step import Step


class NotDispatchable(DomainError):
    """The step cannot be dispatched now."""


def require_dispatchable(step: Step, now: datetime) -> None:
    if not step.dispatchable(now):
        raise NotDispatchable(f"step {step.step_id} is {step.state}, attempt {step.attempts}")


def require_holder(step: Step, worker: str) -> None:
    """Only the worker that claimed the attempt says how it went, and only while it waits."""
    if step.claim_worker != worker or step.state != "waiting":
        raise NotDispatchable(f"{worker} does not hold step {step.step_id}")


def require_spent(step: Step, now: datetime, max_attempts: int) -> None:
    """Abandoned only once no attempt is left and none is still out."""
    if step.state != "waiting" or step.attempts < max_attempts:
        raise NotDispatchable(f"step {step.step_id} still has attempts left")
    if step.under_live_claim(now):
        raise NotDispatchable(f"step {step.step_id} is still being dispatched")

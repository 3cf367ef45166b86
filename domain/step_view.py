"""A step read: its idempotency key, and whose turn it is to attempt it at a moment. A view
only: an event is what moves a step."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

from runledger.domain import turns

if TYPE_CHECKING:
    from runledger.domain.step import StepState


class StepView:
    """The read side of ``Step``: every property is a view of the state its events set."""

    run_id: UUID
    step_id: str
    state: StepState
    claim_expires_at: datetime | None
    next_attempt_at: datetime | None

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}:{self.step_id}"

    @property
    def gave_up(self) -> bool:
        return self.state == "gave_up"

    def under_live_claim(self, now: datetime) -> bool:
        return turns.claim_live(self.claim_expires_at, now)

    def due(self, now: datetime) -> bool:
        """Whether the back-off after its last failure has passed."""
        return turns.due(self.next_attempt_at, now)

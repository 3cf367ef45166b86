from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import AwareDatetime, BeforeValidator, Field

from runledger.application.reading.schemas.common import Answer, Ask, StoredText
from runledger.application.reading.schemas.runs import CleanupSummary, Held
from runledger.application.words import CLEANUP_STATUS_MEANS, STATE, described
from runledger.domain.status import CleanupStatus


def _not_a_number(value: Any) -> Any:
    if isinstance(value, int | float):  # lax pydantic would read 0 as 1970
        raise ValueError("must be a time with its zone, like 2026-12-02T12:00:00Z")
    return value


Time = Annotated[AwareDatetime, BeforeValidator(_not_a_number)]


class Selector(Ask):
    """Which unresolved entries of ended runs to retry; every field narrows the selection."""

    module: StoredText | None = Field(None, max_length=200)
    action: StoredText | None = Field(None, max_length=400)
    run_status: str | None = Field(None, pattern="^(completed|cancelled|aborted)$")
    cleanup_status: CleanupStatus | None = Field(None, description=CLEANUP_STATUS_MEANS)
    ended_after: Time | None = None
    ended_before: Time | None = None


class PlannedEntry(Answer):
    entry_id: UUID
    name: str
    module: str
    action: str | None
    state: str = Field(description=described(STATE))
    attempts: int
    last_error: str | None
    ask: str = Field(description="what a retry would ask of the module")
    held: Held | None = Field(
        None,
        description="another live run holds this lease's target: the retry leaves the entry as "
        "it is",
    )


class PlannedRun(Answer):
    run_id: UUID
    name: str
    status: str
    cleanup_status: CleanupStatus = Field(description=CLEANUP_STATUS_MEANS)
    entries: list[PlannedEntry]


class Plan(Answer):
    where: Selector
    fingerprint: str = Field(description="name it to apply exactly this plan")
    runs: list[PlannedRun]
    entries: int


class Apply(Ask):
    where: Selector
    fingerprint: str = Field(min_length=1, max_length=64)


class Applied(Answer):
    fingerprint: str
    runs: list[CleanupSummary]

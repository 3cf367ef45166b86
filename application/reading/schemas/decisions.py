"""A person decides about an ended run's unresolved entries: keep one, keep what is left, or
retry one (SPEC "A person decides")."""

from __future__ import annotations

from uuid import UUID

from pydantic import Field

from runledger.application.reading.schemas.common import Answer, Ask, SaidText
from runledger.application.reading.schemas.runs import Held
from runledger.domain.status import CleanupStatus


class Keep(Ask):
    reason: SaidText = Field(
        min_length=1, max_length=10_000, description="why it is accepted as it is; recorded"
    )


class Retry(Ask):
    reason: SaidText | None = Field(
        None, min_length=1, max_length=10_000, description="why it is asked again; logged"
    )


class KeptEntry(Answer):
    entry_id: UUID
    name: str


class Kept(Answer):
    """What was kept, in whose name and why; and where the run's cleanup stands after."""

    run_id: UUID
    by: str
    reason: str
    kept: list[KeptEntry]
    cleanup_status: CleanupStatus
    remaining: int = Field(description="the run's entries still unresolved")


class EntryRetried(Answer):
    """One entry asked again: its group's call and where the entry stands after, or (in `held`)
    why it was left as it is."""

    run_id: UUID
    entry_id: UUID
    name: str
    by: str
    state: str = Field(description="the entry's state after the retry")
    attempts: int
    last_error: str | None
    attempted: int = Field(description="entries of its group the call covered")
    reverted: int
    drifted: int
    failed: int
    held: list[Held] = Field(
        description="the entry itself, when another live run holds its lease target: not "
        "reset, not restored"
    )
    cleanup_status: CleanupStatus
    remaining: int = Field(description="the run's entries still unresolved")

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import Field

from runledger.application.reading.schemas.common import Answer
from runledger.domain.status import CleanupStatus


class Change(Answer):
    before: Any
    after: Any


class SideBySide(Answer):
    """For a lease or a drift: what was there before, what the run put there, what is there."""

    baseline: Any
    applied: Any
    current: Any


class Frame(Answer):
    version: int
    event: str
    at: datetime
    state: dict[str, Any]
    changed: dict[str, Change]
    values: SideBySide | None
    actor: str | None = Field(
        None, description="who did it, as the event names them: a runner's worker or a person"
    )


class EntryHistory(Answer):
    entry_id: UUID
    name: str
    frames: list[Frame]
    total: int = Field(description="how many versions the entry has in all")


class ReplayLine(Answer):
    position: int
    at: datetime
    subject: str
    event: str
    actor: str | None
    outcome: str


class EntryState(Answer):
    entry_id: UUID
    name: str
    state: str
    attempts: int
    last_error: str | None


class Replay(Answer):
    run_id: UUID
    name: str
    as_of: datetime | None
    run_status: str
    cleanup_status: CleanupStatus
    lines: list[ReplayLine]
    entries: list[EntryState]

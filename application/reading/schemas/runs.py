from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import Field

from runledger.application.reading.schemas.common import Answer, Ask, Page, SaidText
from runledger.application.words import CLEANUP_STATUS_MEANS, RUN, STATE, described
from runledger.domain.run import RunStatus
from runledger.domain.status import CleanupStatus


class RunOrigin(Answer):
    """The definition version an occurrence started a run from."""

    definition: str
    version: int
    occurrence_id: UUID
    verified_by: str | None = Field(description="null: the version was published unverified")
    verified_at: datetime | None


class RunSummary(Answer):
    run_id: UUID
    name: str
    status: RunStatus = Field(description=described(RUN))
    cleanup_status: CleanupStatus = Field(description=CLEANUP_STATUS_MEANS)
    entries: int = Field(
        description="its entries; a placeholder replaced by what its step made is not one"
    )
    unresolved: int = Field(
        description="its entries not given back, expired or kept: in use while it runs, left after"
    )
    states: dict[str, int] = Field(
        default_factory=dict,
        description="how many of its entries are in each state: "
        + described(STATE, tuple(s for s in STATE if s != "superseded")),
    )
    started_at: datetime
    ended_at: datetime | None
    ended_by: str | None
    end_reason: str | None
    origin: RunOrigin | None = Field(
        None, description="null for a run started from a spec rather than by an occurrence"
    )


class RunPage(Page[RunSummary]):
    pass


class Phase(Answer):
    phase: str
    headline: str
    why_not_advanced: str | None = Field(description="Why this phase has not advanced")


class Entry(Answer):
    entry_id: UUID
    run_id: UUID
    name: str
    kind: str
    ref: str
    module: str
    action: str | None
    step: str
    state: str = Field(description=described(STATE))
    attempts: int
    terminal: bool = Field(
        description="no more automatic attempts: its last failure said retrying cannot help"
    )
    last_error: str | None = Field(
        description="the error of its last failed attempt; on an entry given back, expired or "
        "kept it is history: an earlier attempt failed"
    )
    next_attempt_at: datetime | None
    claimed_by: str | None = Field(description="the worker giving it back right now")
    claim_expires_at: datetime | None = Field(description="when that worker's turn ends")
    kept_by: str | None
    kept_reason: str | None = Field(None, description="why the person who kept it kept it")
    payload: Any
    member_key: str | None
    until: datetime | None
    drift_current: Any
    version: int


class EntryPage(Page[Entry]):
    pass


class EntryGroup(Answer):
    state: str = Field(description=described(STATE))
    count: int
    entries: list[Entry]


class RunDetail(Answer):
    run: RunSummary
    phases: list[Phase]
    entries: list[EntryGroup] = Field(description="the run's entries grouped by state")


class LogLine(Answer):
    position: int
    at: datetime
    kind: str
    detail: dict[str, Any]


class LogPage(Answer):
    run_id: UUID
    lines: list[LogLine] = Field(description="in store order")
    total: int
    earlier: int | None = Field(description="pass as `before` for the lines before these")


class LogLines(Page[LogLine]):
    """A page of a run's log as the API answers it: its last lines in store order, then pages
    back; `next_cursor` reads the lines before these."""

    run_id: UUID
    total: int = Field(description="how many lines the run's log holds in all")


class Held(Answer):
    """A lease entry a person's retry leaves as it is: another live run holds its target, and
    restoring it would undo that run's override. When that run ends, its own restore puts back
    what it found."""

    entry_id: UUID
    name: str
    lease: str
    target: str
    holder: UUID = Field(description="the live run that holds the target")
    until: datetime | None = Field(description="when the holder's lease ends")
    said: str = Field(description="why the entry is not restored, in one sentence")


class CleanupSummary(Answer):
    run_id: UUID
    by: str
    attempted: int
    reverted: int
    drifted: int
    failed: int
    remaining: int
    cleanup_status: CleanupStatus = Field(description=CLEANUP_STATUS_MEANS)
    held: list[Held] = Field(
        default_factory=list,
        description="lease entries a person's retry did not restore: another live run holds "
        "their target",
    )


class Advanced(Answer):
    run_id: UUID
    message: str


class Cancel(Ask):
    cleanup: bool = Field(True, description="give everything back; false keeps it in your name")


class Abort(Ask):
    reason: SaidText = Field(min_length=1, max_length=10_000)


class Started(Answer):
    run_id: UUID

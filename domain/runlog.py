from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.ids import natural_id

LogKind = Literal[
    "run.started",
    "run.phase_advanced",
    "run.completed",
    "run.cancelled",
    "run.aborted",
    "step.succeeded",
    "step.failed",
    "step.answered_late",
    "cleanup.reverted",
    "cleanup.failed",
    "cleanup.drifted",
    "cleanup.swept",
    "cleanup.retry",
    "cleanup.retry_one",
    "cleanup.kept",
    "cleanup.kept_one",
    "cleanup.kept_rest",
    "resource.expired",
    "resource.orphaned",
]
"""Every kind of line a run's log holds: those written as LogEntry, and those the run-log view
derives from runs', steps' and entries' own events. application/words.py says each in words."""

LOG_KINDS: tuple[LogKind, ...] = get_args(LogKind)


class LogEntry(Aggregate):
    """One line of a run's log that no single ledger entry's own events can say.

    A revert call covers a group of entries and a sweep covers a run, so their lines are facts of
    their own. The id comes from the caller's key, so writing the same line twice collides.
    """

    class Written(Aggregate.Created):
        key: str
        run_id: UUID
        kind: str  # a LogKind when written; a store may hold kinds a later version dropped
        detail: dict[str, Any]
        at: datetime

    @staticmethod
    def create_id(key: str) -> UUID:
        return natural_id("log", key)

    @event(Written)
    def __init__(
        self, key: str, run_id: UUID, kind: LogKind, detail: dict[str, Any], at: datetime
    ) -> None:
        self.run_id = run_id
        self.kind = kind
        self.detail = detail
        self.at = at

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.ids import natural_id


class LogEntry(Aggregate):
    """One line of a run's log that no single ledger entry's own events can say.

    A revert call covers a group of entries and a sweep covers a run, so their lines are facts of
    their own. The id comes from the caller's key, so writing the same line twice collides.
    """

    class Written(Aggregate.Created):
        key: str
        run_id: UUID
        kind: str
        detail: dict[str, Any]
        at: datetime

    @staticmethod
    def create_id(key: str) -> UUID:
        return natural_id("log", key)

    @event(Written)
    def __init__(
        self, key: str, run_id: UUID, kind: str, detail: dict[str, Any], at: datetime
    ) -> None:
        self.run_id = run_id
        self.kind = kind
        self.detail = detail
        self.at = at

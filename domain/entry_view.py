"""A ledger entry read: its fate's fields, where callers have always read them on the entry,
and the fate's rules asked of it at a moment. A view only: an event is what moves the fate."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runledger.domain.fate import Fate, State


class EntryView:
    """The read side of ``Resource``: every property is its ``fate``'s, as it stands."""

    fate: Fate

    @property
    def state(self) -> State:
        return self.fate.state

    @property
    def attempts(self) -> int:
        return self.fate.attempts

    @property
    def terminal(self) -> bool:
        return self.fate.terminal

    @property
    def claim_worker(self) -> str | None:
        return self.fate.claim_worker

    @property
    def claim_expires_at(self) -> datetime | None:
        return self.fate.claim_expires_at

    @property
    def next_attempt_at(self) -> datetime | None:
        return self.fate.next_attempt_at

    @property
    def last_error(self) -> str | None:
        return self.fate.last_error

    @property
    def drift_current(self) -> Any:
        return self.fate.drift_current

    @property
    def unresolved(self) -> bool:
        return self.fate.unresolved

    def under_live_claim(self, now: datetime) -> bool:
        return self.fate.under_live_claim(now)

    def retryable(self, now: datetime, max_attempts: int) -> bool:
        return self.fate.retryable(now, max_attempts)

    def still_open(self, now: datetime, max_attempts: int) -> bool:
        return self.fate.still_open(now, max_attempts)

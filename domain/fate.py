"""Where giving a ledger entry back stands, and what each of its events does to that.

Written once: the ``Resource`` aggregate applies these transitions to its events, and the
resources view applies the same ones to its rows. The SQL's state lists are rendered from the
sets here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from runledger.domain import turns

State = Literal[
    "placeholder",
    "live",
    "superseded",
    "reverted",
    "failing",
    "drifted",
    "orphaned",
    "expired",
    "kept",
]
STATES: tuple[State, ...] = get_args(State)
UNRESOLVED: frozenset[str] = frozenset({"placeholder", "live", "failing", "drifted", "orphaned"})
# What automatic cleanup may still work on: a drift waits for a person.
OPEN: frozenset[str] = UNRESOLVED - {"drifted"}


@dataclass(frozen=True)
class Fate:
    """An entry's state and the fields its events move with it."""

    state: State
    attempts: int = 0
    terminal: bool = False
    claim_worker: str | None = None
    claim_expires_at: datetime | None = None
    next_attempt_at: datetime | None = None
    last_error: str | None = None
    drift_current: Any = None

    @classmethod
    def recorded(cls, placeholder: bool) -> Fate:
        # Immutable: every entry starts from one of two fates (a rebuild starts millions).
        return _PLACEHOLDER if placeholder else _LIVE

    @property
    def unresolved(self) -> bool:
        return self.state in UNRESOLVED

    def under_live_claim(self, now: datetime) -> bool:
        return turns.claim_live(self.claim_expires_at, now)

    def due(self, now: datetime) -> bool:
        """Whether the back-off after its last failure has passed."""
        return turns.due(self.next_attempt_at, now)

    def retryable(self, now: datetime, max_attempts: int) -> bool:
        """SPEC's rule: may automatic cleanup attempt this entry now?"""
        return (
            self.state in OPEN
            and not self.terminal
            and self.attempts < max_attempts
            and not self.under_live_claim(now)
            and self.due(now)
        )

    def still_open(self, now: datetime, max_attempts: int) -> bool:
        """Work automatic cleanup may still do: retryable now or after its back-off, or an
        attempt in flight. A run with such an entry is ``pending``."""
        if self.state not in OPEN or self.terminal:
            return False
        return self.attempts < max_attempts or self.under_live_claim(now)

    def why_not_retryable(self, now: datetime, max_attempts: int) -> str:
        """The first rule of ``retryable`` this entry fails, to follow its name."""
        if not self.unresolved:
            return f"is {self.state}"
        if self.state == "drifted":
            return "drifted; only a person can ask again"
        if self.terminal:
            return "failed terminally; only a person can ask again"
        if self.attempts >= max_attempts:
            return f"has used its {max_attempts} attempts"
        if not self.due(now):
            return f"waits until {self.next_attempt_at} for its next attempt"
        return f"is claimed by {self.claim_worker} until {self.claim_expires_at}"

    def superseded(self) -> Fate:
        return self._with(state="superseded")

    def claimed(self, attempt: int, worker: str, expires_at: datetime) -> Fate:
        return self._with(
            attempts=attempt, claim_worker=worker, claim_expires_at=expires_at, next_attempt_at=None
        )

    def reverted(self) -> Fate:
        return self._released(state="reverted")

    def failed(self, mode: str, error: str, next_attempt_at: datetime | None) -> Fate:
        return self._released(
            state="failing",
            terminal=mode == "terminal",
            last_error=error,
            next_attempt_at=next_attempt_at,
        )

    def drifted(self, current: Any, error: str) -> Fate:
        return self._released(state="drifted", drift_current=current, last_error=error)

    def orphaned(self, reason: str) -> Fate:
        # Found gone early, it stays claimable, and an attempt in flight keeps its claim.
        return self._with(state="orphaned", last_error=reason)

    def expired(self) -> Fate:
        return self._released(state="expired")

    def attempts_reset(self) -> Fate:
        # A person asking again is the one thing that lifts a terminal failure or a drift.
        state: State = "failing" if self.state == "drifted" else self.state
        return self._released(state=state, attempts=0, terminal=False)

    def kept(self) -> Fate:
        return self._released(state="kept")

    def _released(self, **changes: Any) -> Fate:
        """No claim holds it and, unless ``changes`` say when, no attempt waits for its time."""
        return self._with(**(_RELEASED | changes))

    def _with(self, **changes: Any) -> Fate:
        # What dataclasses.replace does, less its per-field checks and the frozen __init__'s
        # setattr per field: the resources view moves a fate for every event it projects (a
        # rebuild, millions), and building one field by field was most of that cost.
        moved = object.__new__(Fate)
        fields = moved.__dict__
        fields.update(vars(self))
        fields.update(changes)
        return moved


_RELEASED = {"claim_worker": None, "claim_expires_at": None, "next_attempt_at": None}
_PLACEHOLDER, _LIVE = Fate("placeholder"), Fate("live")

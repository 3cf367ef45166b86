"""How a runner paces its cleanup: a leg bounded by time rather than by a count of runs, and a
rest between ticks that a run's end cuts short.

A count of runs per tick queues behind a burst (the advance leg may end more runs in a tick than
the cleanup leg takes), while a leg that sweeps until nothing is left could keep due steps
waiting for as long as a burst takes. So the cleanup leg sweeps pass after pass until nothing is
left or its time is spent, and a runner whose leg was cut short ticks again at once. Between
ticks the runner looks every ``RUNLEDGER_WAKE_S`` for a run of its own share (division.py) that
ended elsewhere (the API, the CLI, another runner), and gives it back then rather than after the
rest of the interval. On PostgreSQL a look is free until the store NOTIFYs a run's end (``Wake``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from runledger.application.services.sweep.verdicts import Summary
from runledger.domain.run_ends import ENDS


class Halt(Protocol):
    """What a pass looks at between runs and between calls: should it stop here?"""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class Budget:
    """A leg's halt: the runner is stopping, or the leg's time is spent."""

    stop: Halt | None
    until: float

    @classmethod
    def of(cls, stop: Halt | None, seconds: float) -> Budget:
        return cls(stop, time.monotonic() + seconds)

    def is_set(self) -> bool:
        return self.stopping or time.monotonic() >= self.until

    @property
    def stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()


@dataclass
class Swept:
    """What a cleanup leg did: a summary per run it worked (summed over its passes), and whether
    its time ran out with work still found."""

    runs: dict[UUID, Summary]
    cut_short: bool = False

    def add(self, passed: dict[UUID, Summary]) -> None:
        for run_id, summary in passed.items():
            before = self.runs.get(run_id)
            self.runs[run_id] = summary if before is None else before.then(summary)


def sweep_leg(
    sweep: Callable[[Halt], tuple[dict[UUID, Summary], bool]], stop: Halt | None, seconds: float
) -> Swept:
    """Passes while each may have left work (a whole batch of runs found, or a run with more
    than a pass may work) and attempted something, until the runner stops or ``seconds`` are
    spent. A pass is cut between calls, never inside one. A pass that found less than a batch
    worked everything it found: the leg ends, and an attempt that failed waits for its back-off
    and the next tick, not for the next pass."""
    budget = Budget.of(stop, seconds)
    swept = Swept({})
    while not budget.stopping:
        passed, more = sweep(budget)
        swept.add(passed)
        if budget.is_set():
            # Spent before or during this pass, which then left its other runs unworked.
            swept.cut_short = not budget.stopping
            return swept
        if not more or not any(s.attempted for s in passed.values()):
            return swept
    return swept


SAFETY_S = 2.0
"""How often a runner that hears the store's run ends still asks it: a notification lost to a
dropped connection delays a run's give-back by this much at most."""


LOOK_AT = 100
"""Run ends a look reads at most: a look that finds this many wakes the leg whoever owns them."""


class Wake:
    """Which runs have ended since the runner last looked: two reads by the store's position
    (its head, then the run ends after the last head seen), nothing when nothing was written.

    With ``heard`` (PostgreSQL: set by the process's LISTEN whenever a run's end is stored, or
    at every insert on a store whose insert function predates that, store/pg_insert.py) a look
    asks the store only when it was heard, or every ``SAFETY_S``; without it (SQLite, where
    nothing notifies) every look asks the store's head."""

    def __init__(self, recorder: Any, heard: threading.Event | None = None) -> None:
        self.recorder = recorder
        self.heard = heard
        self.seen: int | None = None
        self._asked = 0.0

    def mark(self) -> None:
        """Looked: what is in the store now is the leg's to find."""
        self.seen = self._head()

    def runs_ended(self) -> list[UUID]:
        """The runs that ended since the last look (at most ``LOOK_AT``): the runner wakes its
        cleanup leg for them only if one is its own (``Legs.owes``)."""
        if not self._worth_asking():
            return []
        head = self._head()
        seen, self.seen = self.seen, head
        if seen is None or head <= seen:
            return []
        found = self.recorder.select_notifications(
            start=seen, limit=LOOK_AT, stop=head, topics=ENDS, inclusive_of_start=False
        )
        return [note.originator_id for note in found]

    def _worth_asking(self) -> bool:
        if self.heard is None or self.heard.is_set():
            if self.heard is not None:
                self.heard.clear()  # before the read: an insert after it is heard next time
            return True
        return time.monotonic() - self._asked >= SAFETY_S

    def _head(self) -> int:
        self._asked = time.monotonic()
        return int(self.recorder.max_notification_id() or 0)

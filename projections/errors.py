"""Errors an operator acts on. They live below application/ so projections can raise them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runledger.domain.text import safe_text


class RunledgerError(Exception):
    """An error an operator can act on; its message is one clear sentence."""


@dataclass(frozen=True)
class Stuck:
    """Where one projection stopped: the first event it cannot apply, and why."""

    view: str
    position: int
    topic: str
    originator_id: str
    version: int
    reason: str
    state: bytes

    def event(self) -> str:
        return (
            f"the event at position {self.position} (topic '{safe_text(self.topic, 120)}', "
            f"originator {safe_text(self.originator_id, 60)}, version {self.version})"
        )


class ProjectionStuck(RunledgerError):
    """A projection cannot apply an event: it waits before it, and says which, where and why."""

    def __init__(self, stuck: Sequence[Stuck]) -> None:
        self.stuck = tuple(sorted(stuck, key=lambda s: (s.position, s.view)))
        first = self.stuck[0]
        same = [s.view for s in self.stuck if s.position == first.position]
        others = len(self.stuck) - len(same)
        noun = "projection" if len(same) == 1 else "projections"
        more = f" (and {others} more: see `runledger projections`)" if others else ""
        super().__init__(
            f"{noun} {', '.join(same)} cannot apply {first.event()}: {first.reason}; "
            f"nothing after it is projected until that event is repaired{more}"
        )


class CannotCatchUp(RunledgerError):
    """The store cannot be written, and the projections have events still to apply."""

    def __init__(self, behind: int, error: BaseException) -> None:
        self.behind = behind
        events = "event" if behind == 1 else "events"
        super().__init__(
            f"the store is read-only and its projections are {behind} {events} behind; "
            f"they cannot catch up, so what they show would be stale ({safe_text(error, 240)}): "
            "make the store writable, or let a runledger that can write it catch up first"
        )

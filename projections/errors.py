"""Errors an operator acts on. They live below application/ so projections can raise them."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass


class RunledgerError(Exception):
    """An error an operator can act on; its message is one clear sentence."""


def plain(text: object, limit: int = 240) -> str:
    """Text from the store or a driver made fit for one sentence: one line, no control
    characters or lone surrogates (shown escaped), bounded."""
    try:
        raw = str(text)
    except Exception:  # a value that cannot even say what it is still gets a sentence
        raw = f"<unprintable {type(text).__name__}>"
    shown = "".join(
        ch if unicodedata.category(ch) not in ("Cc", "Cs", "Zl", "Zp") else f"\\x{ord(ch):02x}"
        if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
        for ch in raw[: limit + 1]
    )
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


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
        return (f"the event at position {self.position} (topic '{plain(self.topic, 120)}', "
                f"originator {plain(self.originator_id, 60)}, version {self.version})")


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
            f"they cannot catch up, so what they show would be stale ({plain(error)}): "
            "make the store writable, or let a runledger that can write it catch up first"
        )

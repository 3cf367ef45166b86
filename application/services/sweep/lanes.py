"""A sweep pass's runs divided between lanes, each worked on a thread of its own.

On PostgreSQL a call's save waits for the server and its commit, a good part of a pass's
time; a second lane works its own runs meanwhile. Each lane is a pass of its own (its claims,
its verdicts, what it carries from one run to the next, its saves), so every call is still
claimed before it starts and judged in a save right after it: only the order in which two
runs' calls interleave changes. SQLite lets one writer at a time in and a waiting writer
sleeps, so there a second lane only waits and a sweep is slower with two: one. The figures are
in scripts/MEASUREMENTS.md, "Sweep lanes".
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from functools import partial
from typing import TypeVar

from runledger.application.settings import MAX_CLEANUP_LANES

T = TypeVar("T")
R = TypeVar("R")

_THREADS = ThreadPoolExecutor(
    max_workers=MAX_CLEANUP_LANES - 1, thread_name_prefix="runledger-lane"
)
"""Lanes past the first; the caller's thread works the first. Reused, pass after pass."""


def divide(items: list[T], lanes: int) -> list[list[T]]:
    """``items`` dealt to up to ``lanes`` lanes in turn, each in its order; none empty."""
    return [part for part in (items[i::lanes] for i in range(max(lanes, 1))) if part]


def in_lanes(work: Callable[[list[T]], R], items: list[T], lanes: int) -> list[R]:
    """``work`` over each lane's items, the lanes at once, their answers in lane order."""
    return at_once([partial(work, part) for part in divide(items, lanes)])


def at_once(lanes: list[Callable[[], R]]) -> list[R]:
    """Each lane's answer, the lanes worked at once, in lane order. Every lane has ended when
    this returns or raises; a lane's exception is raised here."""
    if len(lanes) <= 1:
        return [lane() for lane in lanes]
    if len(lanes) > MAX_CLEANUP_LANES:
        raise ValueError(f"at most {MAX_CLEANUP_LANES} lanes, not {len(lanes)}")
    others = [_THREADS.submit(lane) for lane in lanes[1:]]
    try:
        first = lanes[0]()
    finally:
        wait(others)
    return [first, *(lane.result() for lane in others)]

"""Reads over the projections, each of them fresh: whatever was saved before a read, in this
process or another, is in its answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from runledger.projections.backend import Backend

T = TypeVar("T")


class Moment:
    """One request's reads: fresh as of its first read, until something it does is saved."""

    caught_up = False


_moment: ContextVar[Moment | None] = ContextVar("runledger_moment", default=None)


@contextmanager
def one_moment() -> Iterator[None]:
    """The reads in the block (one request's, in whichever threads it runs) share one catch-up,
    made before the first of them, and made again after anything in the block is saved
    (``written``): a request checked with the store three to five times whether anything new
    had come (its token, its page, its rows)."""
    token = _moment.set(Moment())
    try:
        yield
    finally:
        _moment.reset(token)


def written() -> None:
    """Something was saved: the calling request's next read catches up again."""
    moment = _moment.get()
    if moment is not None:
        moment.caught_up = False


def shared(call: Callable[[], T]) -> Callable[[], T]:
    """``call`` made once for every caller waiting on it: a caller waits its turn, and when a
    call that began after it arrived has ended meanwhile, takes that call's answer instead of
    making its own. For a catch-up that is exact: a catch-up begun after a read arrived saw
    every write saved before the read."""
    lock = threading.Lock()
    begun = [0]
    last: list[tuple[int, T]] = []

    def once() -> T:
        arrived = begun[0]
        with lock:
            if last and last[0][0] > arrived:
                return last[0][1]
            begun[0] += 1
            mine = begun[0]
            answer = call()
            last[:] = [(mine, answer)]
            return answer

    return once


class FreshReads:
    """Catch up, then read: the step every read of the views takes.

    ``fresh`` (the projector's catch-up) runs before every read: read-your-writes is kept here,
    once, rather than by every caller remembering to catch the views up first.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        fresh: Callable[[], object],
        seen: Callable[[str, list[Any]], object] = lambda table, rows: None,
    ) -> None:
        self.backend = backend
        self.fresh = fresh
        self.seen = seen
        """Told the whole rows a read found, by table: the views fold from them (known.py)."""
        self._caught_up = threading.local()

    @contextmanager
    def one_catch_up(self) -> Iterator[None]:
        """This thread's reads in the block share one catch-up, made as it starts: fresh as of
        that moment. A sweep reads a pass's work before writing any of it, and a catch-up before
        each of its reads only asked the store again whether anything new had come."""
        self._fresh()
        self._caught_up.held = True
        try:
            yield
        finally:
            self._caught_up.held = False

    def _rows(self, statement: str, params: list[Any], *, by_index: bool = False) -> list[Any]:
        if not getattr(self._caught_up, "held", False):
            self._fresh()
        return self.backend.select(self.backend.sql(statement), params, by_index=by_index)

    def _fresh(self) -> None:
        moment = _moment.get()
        if moment is None:
            self.fresh()
        elif not moment.caught_up:
            self.fresh()
            moment.caught_up = True

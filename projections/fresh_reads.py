"""Reads over the projections, each of them fresh: whatever was saved before a read, in this
process or another, is in its answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from runledger.projections.backend import Backend


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
        self.fresh()
        self._caught_up.held = True
        try:
            yield
        finally:
            self._caught_up.held = False

    def _rows(self, statement: str, params: list[Any], *, by_index: bool = False) -> list[Any]:
        if not getattr(self._caught_up, "held", False):
            self.fresh()
        return self.backend.select(self.backend.sql(statement), params, by_index=by_index)

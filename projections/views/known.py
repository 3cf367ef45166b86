"""Rows a view already knows, so that a page need not read them back from its table.

A row view's row is a fold of one aggregate's events, and its ``version`` column is the version
of the last event folded in. A page applies an aggregate's events after the position every
projector has reached, so the table holds that aggregate's row at exactly the version before
the page's first event for it, and any row of the same version is that row, whoever folded it
and whenever it was read. A row remembered here is used only at that version; at any other it
is read from the table again, which is also what happens after a page that rolled back.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

Row = dict[str, Any]

KNOWN_ROWS = 4_096
"""Rows remembered per view, the least recently seen forgotten first: a few passes' worth."""


class KnownRows:
    """Rows by key, each as the table held it at its version: moved by this view, or read."""

    def __init__(self, revive: Callable[[Row], Row], size: int = KNOWN_ROWS) -> None:
        self._revive = revive
        self._size = size
        self._rows: OrderedDict[str, tuple[bool, Row]] = OrderedDict()
        """key -> (revived yet, row): rows read elsewhere are revived only if a page uses them."""
        self._lock = threading.Lock()
        """Reads on any thread tell it rows while a catch-up takes them."""

    def take(self, firsts: dict[str, int]) -> dict[str, Row]:
        """The rows these aggregates' first events in a page move, where they are known at the
        version before; each is taken out, to be remembered again as the page leaves it."""
        with self._lock:
            taken = {key: self._rows.pop(key, None) for key in firsts}
        found: dict[str, Row] = {}
        for key, known in taken.items():
            if known is not None and known[1]["version"] == firsts[key] - 1:
                revived, row = known
                found[key] = dict(row) if revived else self._revive(row)
        return found

    def moved(self, rows: dict[str, Row]) -> None:
        """Rows as this view has just written them."""
        with self._lock:
            for key, row in rows.items():
                self._remember(key, (True, row))

    def read(self, key: str, rows: Iterable[Any]) -> None:
        """Rows read from the view's table (all its columns), keyed by ``key``."""
        with self._lock:
            for row in rows:
                self._remember(row[key], (False, row))

    def _remember(self, key: str, known: tuple[bool, Row]) -> None:
        self._rows[key] = known
        self._rows.move_to_end(key)
        if len(self._rows) > self._size:
            self._rows.popitem(last=False)

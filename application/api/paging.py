"""One envelope for every list the API answers, `{items, next_cursor}`, paged by `limit` and
`cursor`. Runs page in the store (reading/answers.py); the other lists are short and read in
their own order up to a bound. A cursor is to be passed back, not made: its form is fixed by its
pattern so that every cursor the document allows is one the server takes (a made-up one reads
some page, perhaps an empty one), and what it means may change."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Query

from runledger.application.reading.schemas.common import MAX_INT, Page

MAX_LIMIT = 1_000
MAX_REACH = 10_000
"""How far into a list a cursor may reach: the lists paged here are read whole up to this."""
ABOUT = "the `next_cursor` of the page before; none for the first page"
OFFSET = r"^[1-9][0-9]{0,4}$"
POSITION = r"^[1-9][0-9]{0,18}$"

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="at most this many items")]
Cursor = Annotated[str | None, Query(pattern=OFFSET, description=ABOUT)]
LogCursor = Annotated[str | None, Query(pattern=POSITION, description=ABOUT)]

R = TypeVar("R")
T = TypeVar("T")
P = TypeVar("P", bound=Page[Any])


@dataclass(frozen=True)
class Window:
    """Which part of a list one request asks for."""

    offset: int
    limit: int

    @property
    def reach(self) -> int:
        """How many of the list's first items to read: this page and one more, to know."""
        return min(self.offset + self.limit, MAX_REACH) + 1

    def page(self, found: Sequence[R], shape: Callable[[R], T], model: type[P]) -> P:
        end = min(self.offset + self.limit, MAX_REACH)
        more = len(found) > end and end < MAX_REACH
        return model(
            items=[shape(one) for one in found[self.offset : end]],
            next_cursor=str(end) if more else None,
        )


def window(limit: int, cursor: str | None) -> Window:
    """The window after ``cursor`` (its pattern, checked by the route, makes it a number)."""
    return Window(0 if cursor is None else int(cursor), limit)


def log_cursor(earlier: int | None) -> str | None:
    """The cursor of a run's log lines before position ``earlier``."""
    return None if earlier is None else str(earlier)


def log_before(cursor: str | None) -> int | None:
    return None if cursor is None else min(int(cursor), MAX_INT)

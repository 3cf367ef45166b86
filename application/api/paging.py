"""One envelope for every list the API answers, `{items, next_cursor}`, paged by `limit` and
`cursor`. Runs page in the store (reading/answers.py); the other lists are short and read in
their own order up to a bound, and their cursor is how far the last page went, as opaque text
naming its list so that a cursor given out for one list is refused by another."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Query

from runledger.application.errors import BadQuery
from runledger.application.reading.schemas.common import MAX_INT, Page

MAX_LIMIT = 1_000
MAX_REACH = 10_000
"""How far into a list a cursor may reach: the lists paged here are read whole up to this."""
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,400}$"

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description="at most this many items")]
Cursor = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=400,
        pattern=CURSOR_PATTERN,
        description="the `next_cursor` of the page before; none for the first page",
    ),
]

R = TypeVar("R")
T = TypeVar("T")
P = TypeVar("P", bound=Page[Any])


@dataclass(frozen=True)
class Window:
    """Which part of a list one request asks for."""

    kind: str
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
            next_cursor=_token(self.kind, end) if more else None,
        )


def window(kind: str, limit: int, cursor: str | None) -> Window:
    return Window(kind, 0 if cursor is None else _number(kind, cursor, MAX_REACH), limit)


def log_cursor(earlier: int | None) -> str | None:
    """The cursor of a run's log lines before position ``earlier``."""
    return None if earlier is None else _token("log", earlier)


def log_before(cursor: str | None) -> int | None:
    return None if cursor is None else _number("log", cursor, MAX_INT)


def _token(kind: str, number: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}|{number}".encode()).decode().rstrip("=")


def _number(kind: str, token: str, most: int) -> int:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        named, number = raw.split("|", 1)
        if named == kind and number.isascii() and number.isdigit() and 0 < int(number) <= most:
            return int(number)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        pass
    raise BadQuery("cursor: not a cursor this API gave out for this list")

"""What every view shares: rows, the event-view and row-view bases, cell conversions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from operator import itemgetter
from typing import Any, ClassVar

from eventsourcing.domain import DomainEventProtocol

from runledger.domain.topics import topics_of
from runledger.domain.values import written_out
from runledger.projections.backend import Backend, Cursor, chunks
from runledger.projections.views.known import KnownRows

Row = dict[str, Any]
Event = DomainEventProtocol[Any]


class ProjectionError(Exception):
    """The store holds an event this view cannot place: the view must be rebuilt."""


def require(row: Row | None, event: Any) -> Row:
    if row is None:
        raise ProjectionError(f"{type(event).__qualname__} for {event.originator_id} has no row")
    return row


def cells(values: Sequence[Any]) -> list[Any]:
    """A row as every engine takes it. Events stored before values were checked at the edge may
    hold a NUL, which PostgreSQL text refuses: it is written out, never a reason to stop."""
    # written_out's own first test, inline: a rebuild writes millions of cells, nearly all clean.
    return [
        v if type(v) is not str or (v.isascii() and "\x00" not in v) else written_out(v)
        for v in values
    ]


def epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


# What json.dumps(value, sort_keys=True, default=str) writes, by the same C encoder, built once
# rather than at every call (json.JSONEncoder.encode builds one each time: most of its cost).
# It skips the check for circular containers, which values parsed from JSON cannot be.
_ENCODER = c_make_encoder(None, str, encode_basestring_ascii, None, ": ", ", ", True, False, True)


def as_json(value: Any) -> str | None:
    return None if value is None else "".join(_ENCODER(value, 0))


class EventView:
    """A view: its name, its table, and the events it reads."""

    name: ClassVar[str]
    table: ClassVar[str]
    events: ClassVar[tuple[type[Any], ...]]

    @classmethod
    @cache
    def topics(cls) -> frozenset[str]:
        return frozenset(t for e in cls.events for t in topics_of(e))


class RowView(EventView):
    """A table with one row per aggregate, kept by applying each event to its row.

    A page of events is applied in memory to the rows it touches, which are then written back in
    one statement: a page costs two round trips whatever its size.
    """

    key: ClassVar[str]
    columns: ClassVar[tuple[str, ...]]
    apply: ClassVar[Callable[[Any, Row | None], Row]]

    def __init__(self) -> None:
        self.in_order: Callable[[Row], Sequence[Any]] = itemgetter(*self.columns)
        """A row's values in column order."""
        self.known = KnownRows(self._revived_read)

    def process(
        self, backend: Backend, cursor: Cursor, events: Sequence[tuple[int, Event]]
    ) -> None:
        if not events:
            return
        firsts: dict[str, int] = {}
        for _, event in events:
            firsts.setdefault(str(event.originator_id), event.originator_version)
        rows = self.rows(backend, cursor, firsts)
        for _, event in events:
            entry = str(event.originator_id)
            rows[entry] = type(self).apply(event, rows.get(entry))
        backend.upsert(
            cursor, self.table, self.columns, self.key, [self.stored(r) for r in rows.values()]
        )
        self.known.moved(rows)

    def rows(self, backend: Backend, cursor: Cursor, firsts: dict[str, int]) -> dict[str, Row]:
        """The rows of the aggregates whose first events in a page are ``firsts``: none where
        that is the aggregate's first event, a known row (known.py) or the table's otherwise."""
        found = self.known.take(firsts)
        wanted = sorted(k for k, first in firsts.items() if first > 1 and k not in found)
        if wanted:
            found |= self.load(backend, cursor, wanted)
        return found

    def load(self, backend: Backend, cursor: Cursor, ids: list[str]) -> dict[str, Row]:
        """The rows of these keys that the table holds, as the apply functions move them."""
        found: dict[str, Row] = {}
        for part in chunks(ids):
            markers = backend.markers(len(part))
            cursor.execute(
                backend.sql(f"SELECT * FROM {{{self.table}}} WHERE {self.key} IN ({markers})"),
                list(part),
            )
            for row in cursor.fetchall():
                found[row[self.key]] = self.revived({c: row[c] for c in self.columns})
        return found

    def _revived_read(self, stored: Row) -> Row:
        return self.revived({c: stored[c] for c in self.columns})

    def revived(self, stored: Row) -> Row:
        """A row as its table holds it, made into the row the apply functions move."""
        return stored

    def stored(self, row: Row) -> list[Any]:
        """A row as its table holds it: its cells, in column order."""
        return cells(self.in_order(row))

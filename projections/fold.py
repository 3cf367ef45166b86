"""A rebuild's replay: events folded per aggregate in memory, each row written once.

The live projector reads back the rows a page touches and writes them again, page after page.
A rebuild starts from empty tables: it keeps the rows it folds in memory, the ones moved last
kept longest, and writes a row out only when it falls out of that bounded set, or at the end.
A row is then written once, by a plain insert (COPY on PostgreSQL), unless an event moved it
again after it was written out: then it is read back, and later upserted. Memory is bounded by
the rows kept, whatever the size of the store (on PostgreSQL, plus one page's rows being written
on a thread of their own while the next page is folded: projections/writer.py).

The quick path, not a second set of rules: the rows move by the views' own apply functions.
Anything an event is to blame for (a view that cannot apply it, a topic nobody knows, a state
that cannot be decoded, a value the store refuses) ends it with ``Blamed``; the rebuild then
replays through the live projector, which stops each view before that event and says why.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

from runledger.projections.backend import Backend, Note
from runledger.projections.folders import (
    Apply,
    Folder,
    LineFolder,
    RowFolder,
    Spill,
    folders,
    written_out,
)
from runledger.projections.lazy import lazy_class, parse_state
from runledger.projections.stored import Undecodable, require_known
from runledger.projections.views.base import Row
from runledger.projections.writer import Writer, writing

ROWS_KEPT = 20_000
"""Rows kept in memory, all views together: more than the aggregates still moving in a busy
store (an entry's events lie a run's length apart), in a few tens of megabytes."""

Progress = Callable[[int, int], None]


class Blamed(Exception):
    """An event could not be folded: the careful path must find which one, and say why."""


def fold(
    backend: Backend,
    transcodings: dict[str, Any],
    views: Sequence[Any],
    page: int,
    progress: Progress,
    upto: int,
) -> None:
    """Replay the store from zero to position ``upto`` into the (empty) tables of ``backend``.
    Raises Blamed when an event is to blame for something, having written part."""
    going = folders(views)
    plans = Plans(going, transcodings)
    rowed: dict[str, list[RowFolder]] = {}
    for folder in going:
        if isinstance(folder, RowFolder):
            for topic in folder.topics:
                rowed.setdefault(topic, []).append(folder)
    with paused_gc(), Writer(aside=backend.writes_aside) as writer:
        for notes in pages(backend, page, upto):
            with blaming(backend):
                back = written_out(rowed, notes)
                if back:
                    writer.wait()  # the rows to read back may be in the write under way
                    with backend.transaction(commit=False) as cursor:
                        for folder, keys in back.items():
                            folder.read_back(backend, cursor, keys)
                _fold(plans, notes)
                spills = _spilled(going, ROWS_KEPT)
                writer.put(writing(_write, backend, spills, notes[-1][0], len(notes), progress))
        with blaming(backend):
            writer.put(writing(_write, backend, _spilled(going, 0), upto))
            writer.wait()


def pages(backend: Backend, page: int, upto: int) -> Iterator[list[Note]]:
    """The store's events up to ``upto``, a page at a time."""
    position = 0
    while position < upto and (notes := backend.select_page(position, page)):
        if notes[-1][0] > upto:
            notes = [n for n in notes if n[0] <= upto]
        yield notes
        position = notes[-1][0]


Plan = tuple[type[Any], tuple[tuple[dict[str, Row], Apply], ...], tuple[LineFolder, ...]]
"""For one topic: the class its events are made of, each row view's rows with the function
that moves them, and the line views."""


class Plans(dict[str, Plan | None]):
    """Each topic's plan, made the first time the topic is met (None: no view reads it)."""

    def __init__(self, going: list[Folder], transcodings: dict[str, Any]) -> None:
        super().__init__()
        self.going = going
        self.transcodings = transcodings

    def __missing__(self, topic: str) -> Plan | None:
        readers = [f for f in self.going if topic in f.topics]
        plan: Plan | None = None
        if readers:
            cls = lazy_class(topic, self.transcodings)
            rows = tuple((f.rows, f.applying(cls)) for f in readers if isinstance(f, RowFolder))
            lines = tuple(f for f in readers if isinstance(f, LineFolder))
            plan = (cls, rows, lines)
        else:
            require_known(topic)
        self[topic] = plan
        return plan


def _fold(plans: Plans, notes: list[Note]) -> None:
    """Each event made once (stored.decode's work, inline: this loop runs for every event of
    the store) and moved through every view that reads it."""
    loads, make, fill = orjson.loads, object.__new__, object.__setattr__
    for position, key, version, topic, state in notes:
        plan = plans[topic]
        if plan is None:
            continue
        cls, rowed, lined = plan
        try:
            fields = loads(state)
        except orjson.JSONDecodeError:
            fields = _parsed(state)
        if type(fields) is not dict:
            raise Undecodable(f"the stored state is a JSON {type(fields).__name__}")
        fields["originator_id"] = key
        fields["originator_version"] = version
        event = make(cls)
        fill(event, "__dict__", fields)  # event classes are frozen dataclasses
        for rows, apply in rowed:
            rows[key] = apply(event, rows.pop(key, None))  # popped and put back: the newest
        for line in lined:
            line.fold(position, event)


def _parsed(state: bytes) -> Any:
    try:
        return parse_state(state)
    except Exception as error:
        raise Undecodable(f"{type(error).__name__}") from error


def _spilled(going: list[Folder], keep: int) -> list[Spill]:
    """The run log's lines, and, past ``keep`` rows, each view's share of the rows moved
    longest ago, down to three quarters of ``keep`` (``keep`` 0: every row)."""
    kept = sum(len(folder) for folder in going)
    over = kept - keep * 3 // 4 if kept > keep else 0
    return [f.spill(-(-over * len(f) // kept) if over else 0) for f in going]


def _write(
    backend: Backend,
    spills: list[Spill],
    position: int,
    count: int = 0,
    progress: Progress | None = None,
) -> None:
    """Write out a page's spill, and how far the replay has read; then say so, so that what
    progress reports is what the tables hold, even when pages are written aside.

    That position is the replay's, not the rows': a rebuild's tables are read by nobody until
    everything is written out, and one that stops midway is dropped by the next."""
    with backend.transaction(commit=True) as cursor:
        for spill in spills:
            spill.write(backend, cursor)
        cursor.execute(backend.sql("UPDATE {rl_tracking} SET position = %s"), [position])
    if progress is not None:
        progress(count, position)


@contextmanager
def blaming(backend: Backend) -> Iterator[None]:
    """Whatever an event is to blame for ends the quick path as Blamed; the store's trouble
    goes on up as it is."""
    try:
        yield
    except Exception as error:
        if backend.blames_event(error):
            raise Blamed(str(error)) from error
        raise


@contextmanager
def paused_gc() -> Iterator[None]:
    """A page of events and the rows kept are many small objects that live a while: the cycle
    collector would scan them again and again and find no cycle, since folding makes none: a
    large share of the time (scripts/MEASUREMENTS.md, "Cycle collector paused while folding")."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

"""Rebuilding views from position zero beside the live ones, then swapping them in at once."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.application import Application

from runledger.projections.backend import Backend, Cursor
from runledger.projections.fold import Blamed, fold
from runledger.projections.projector import Progress, Projector
from runledger.projections.schema import create_indexes, create_table
from runledger.projections.views.catalog import View, all_views

log = logging.getLogger("runledger.rebuild")

SHADOW = "_next"
REBUILD_PAGE = 10_000


@dataclass
class Difference:
    table: str
    key: str
    live: dict[str, Any] | None
    rebuilt: dict[str, Any] | None


@dataclass
class RebuildReport:
    views: list[str]
    events: int = 0
    seconds: float = 0.0
    position: int = 0
    swapped: bool = False
    differences: list[Difference] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds spent preparing the shadow tables, replaying, and swapping (or comparing)."""

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def choose(names: list[str] | None) -> list[View]:
    views = all_views()
    if not names:
        return views
    known = {v.name: v for v in views}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise KeyError(
            f"no projection named {', '.join(unknown)}; projections are {', '.join(known)}"
        )
    return [known[n] for n in dict.fromkeys(names)]


def rebuild(
    app: Application[Any],
    live: Backend,
    names: list[str] | None = None,
    *,
    verify: bool = False,
    progress: Progress | None = None,
) -> RebuildReport:
    """Replay the store from zero into shadow tables. Then either swap them in, in one
    transaction (readers see the old tables or the new ones, never half of either), or, to
    verify, compare them row by row with the live tables and drop them.

    A rebuild that fails (an event no view can apply, the store in trouble) drops its shadow
    tables; one that is killed leaves the live tables untouched, and the next one starts over.
    """
    views = choose(names)
    shadow = live.with_suffix(SHADOW)
    report = RebuildReport([v.name for v in views])
    with _timed(report, "prepare"):
        _prepare(shadow, views)
    try:
        with _timed(report, "replay"):
            _replay(app, shadow, views, report, progress)
        with _timed(report, "compare" if verify else "swap"):
            _finish(app, live, shadow, views, report, verify)
    except BaseException:
        _discard(shadow, views)
        raise
    report.seconds = sum(report.phases.values())
    return report


@contextmanager
def _timed(report: RebuildReport, phase: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    report.phases[phase] = time.perf_counter() - started


def _replay(
    app: Application[Any],
    shadow: Backend,
    views: list[View],
    report: RebuildReport,
    progress: Progress | None,
) -> None:
    def counted(count: int, reached: int) -> None:
        report.events += count
        if progress is not None:
            progress(count, reached)

    transcoder: Any = app.mapper.transcoder
    upto = Projector(app, shadow, views).head()
    try:
        fold(shadow, transcoder.names, views, REBUILD_PAGE, counted, upto)
    except Blamed as blamed:
        # The live projector's careful path finds the event and stops each view before it,
        # the very way catching up would; it raises ProjectionStuck, naming them.
        log.info("replaying carefully: an event could not be folded (%s)", blamed)
        report.events = 0
        _prepare(shadow, views)
        Projector(app, shadow, views, page=REBUILD_PAGE).catch_up(counted)


def _finish(
    app: Application[Any],
    live: Backend,
    shadow: Backend,
    views: list[View],
    report: RebuildReport,
    verify: bool,
) -> None:
    """Bring both sets of tables level with what was written meanwhile, then compare or swap."""
    with live.transaction(commit=True) as cursor:
        Projector(app, live, views).catch_up_in(cursor)
        report.position = Projector(app, shadow, views, page=REBUILD_PAGE).catch_up_in(cursor)
        if verify:
            report.differences = _compare(live, shadow, views, cursor)
            _drop(shadow, cursor, [v.table for v in views] + ["rl_tracking"])
        else:
            _swap(live, shadow, views, cursor, report.position)
            report.swapped = True


def _discard(shadow: Backend, views: list[View]) -> None:
    """A rebuild that failed takes its shadow tables with it. If even that fails (the store
    went away), the original error is the one to report; the next rebuild drops them first."""
    try:
        with shadow.transaction(commit=True) as cursor:
            _drop(shadow, cursor, [v.table for v in views] + ["rl_tracking"])
    except Exception:
        log.warning("a failed rebuild could not drop its shadow tables", exc_info=True)


def _prepare(shadow: Backend, views: list[View]) -> None:
    with shadow.transaction(commit=True) as cursor:
        _drop(shadow, cursor, [v.table for v in views] + ["rl_tracking"])
        create_table(shadow, cursor, "rl_tracking")
        for view in views:
            # Indexes come after the bulk load would be faster, but the view reads its own
            # rows by key on every page: the primary key is enough, the rest can wait.
            create_table(shadow, cursor, view.table, indexes=False)
            cursor.execute(
                shadow.sql("INSERT INTO {rl_tracking} (name, position) VALUES (%s, 0)"),
                [view.name],
            )


def _drop(backend: Backend, cursor: Cursor, tables: list[str]) -> None:
    for table in tables:
        cursor.execute(f"DROP TABLE IF EXISTS {backend.qualify(table)}")


def _swap(live: Backend, shadow: Backend, views: list[View], cursor: Cursor, at: int) -> None:
    for view in views:
        cursor.execute(f"DROP TABLE {live.qualify(view.table)}")
        bare = live.qualify(view.table).rpartition(".")[2]
        cursor.execute(f"ALTER TABLE {shadow.qualify(view.table)} RENAME TO {bare}")
        create_indexes(live, cursor, view.table)
    cursor.execute(
        live.sql(
            f"UPDATE {{rl_tracking}} SET position = %s WHERE name IN ({live.markers(len(views))})"
        ),
        [at, *[v.name for v in views]],
    )
    cursor.execute(f"DROP TABLE IF EXISTS {shadow.qualify('rl_tracking')}")


def _compare(live: Backend, shadow: Backend, views: list[View], cursor: Cursor) -> list[Difference]:
    """Rows that differ, found by the database (EXCEPT both ways), so memory stays flat."""
    found: list[Difference] = []
    for view in views:
        one, other = live.qualify(view.table), shadow.qualify(view.table)
        only_live = _rows(cursor, f"SELECT * FROM {one} EXCEPT SELECT * FROM {other}")
        only_new = _rows(cursor, f"SELECT * FROM {other} EXCEPT SELECT * FROM {one}")
        for key in sorted(only_live.keys() | only_new.keys()):
            found.append(Difference(view.table, key, only_live.get(key), only_new.get(key)))
    return found


def _rows(cursor: Cursor, statement: str) -> dict[str, dict[str, Any]]:
    cursor.execute(statement)
    rows = [{k: row[k] for k in row.keys()} for row in cursor.fetchall()]  # noqa: SIM118
    return {str(next(iter(r.values()))): r for r in rows}

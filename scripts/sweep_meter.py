"""Observing runledger's sweep from outside: write transactions and their rows, and where the
wall time and the sweep thread's CPU went; the process's peak resident memory."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import runledger.application.services.sweep.give_back as cleanup_module
from runledger.application.runledger import Runledger
from runledger.projections.schema import OPEN_INDEX

OPEN_INDEX_NAME = "rl_resources" + OPEN_INDEX
"""The open-entries index of the live rl_resources table, as plans and dbstat name it."""

# give_back calls the name it imported: the meter patches that binding (patching
# modules.deadline would not reach it), so the name is looked up rather than an attribute.
DEADLINE = "call_with_deadline"


@dataclass
class Meter:
    """What the sweep did, observed from outside: write transactions and their rows, and where
    the wall time went."""

    write_txns: list[int] = field(default_factory=list)  # rows written, one item per txn
    saves: int = 0
    save_events: int = 0
    state_bytes: int = 0
    pages: int = 0
    reads: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # this thread's
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class CountingCursor:
    """Passes everything through; adds the rows each write statement changed."""

    def __init__(self, cursor: Any, sink: list[int]) -> None:
        self._cursor = cursor
        self._sink = sink

    def _count(self, statement: Any) -> None:
        text = statement if isinstance(statement, str) else str(statement)
        if text.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            raw = getattr(self._cursor, "sqlite_cursor", self._cursor)  # the library's wrapper
            self._sink[0] += max(raw.rowcount, 0)

    def execute(self, statement: Any, params: Any = None) -> Any:
        result = (
            self._cursor.execute(statement, params)
            if params is not None
            else (self._cursor.execute(statement))
        )
        self._count(statement)
        return result

    def executemany(self, statement: Any, params: Any) -> Any:
        result = self._cursor.executemany(statement, params)
        self._count(statement)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def timed(meter: Meter, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            meter.seconds[label] += time.perf_counter() - start
            meter.cpu[label] += time.thread_time() - cpu
            meter.calls[label] += 1

    return wrapper


def instrument(rl: Runledger, meter: Meter) -> Callable[[], None]:
    """Observe the sweep through instance attributes and one module attribute; answers a
    function that puts everything back."""
    app, backend, projector = rl.app, rl.backend, rl.projector
    original_save = app.save
    original_transaction = backend.transaction
    page_method = "advance" if hasattr(projector, "advance") else "_page"  # one page each call
    original_page: Callable[..., tuple[int, int]] = getattr(projector, page_method)
    original_catch_up = projector.catch_up
    original_call: Callable[..., object] = getattr(cleanup_module, DEADLINE)

    def save(*objs: Any, **kwargs: Any) -> Any:
        label = "app.save (event store write txns)"
        start, cpu = time.perf_counter(), time.thread_time()
        recordings = original_save(*objs, **kwargs)
        meter.seconds[label] += time.perf_counter() - start
        meter.cpu[label] += time.thread_time() - cpu
        meter.saves += 1
        meter.save_events += len(recordings)
        meter.state_bytes += sum(len(r.notification.state) for r in recordings)
        meter.write_txns.append(len(recordings))
        return recordings

    @contextlib.contextmanager
    def transaction(*, commit: bool) -> Iterator[Any]:
        if not commit:
            meter.reads += 1
            with original_transaction(commit=commit) as cursor:
                yield cursor
            return
        sink = [0]
        with original_transaction(commit=commit) as cursor:
            yield CountingCursor(cursor, sink)
        meter.write_txns.append(sink[0])

    def page(*args: Any, **kwargs: Any) -> tuple[int, int]:
        meter.pages += 1
        return original_page(*args, **kwargs)

    app.save = save  # type: ignore[method-assign]
    backend.transaction = transaction  # type: ignore[method-assign]
    setattr(projector, page_method, page)
    projector.catch_up = timed(  # type: ignore[method-assign]
        meter, "projector.catch_up (page write txns)", original_catch_up
    )
    setattr(
        cleanup_module,
        DEADLINE,
        timed(meter, "module revert calls (a pool thread each)", original_call),
    )
    queries = rl.queries
    # run() answers through runs(): wrapping runs() alone counts each read once.
    wrapped = [n for n in ("candidate_runs", "runs", "retryable_pages") if hasattr(queries, n)]
    for name in wrapped:
        setattr(queries, name, timed(meter, f"queries.{name}", getattr(queries, name)))
    streams = rl.cleanup.streams
    streams.load = timed(meter, "streams.load (read + replay)", streams.load)  # type: ignore[method-assign]

    def restore() -> None:
        for target, name in (
            (app, "save"),
            (backend, "transaction"),
            (projector, page_method),
            (projector, "catch_up"),
            *[(queries, n) for n in wrapped],
            (streams, "load"),
        ):
            with contextlib.suppress(AttributeError):
                delattr(target, name)
        setattr(cleanup_module, DEADLINE, original_call)

    return restore


class RssSampler:
    """Samples this process's resident set every few milliseconds; reports the peak."""

    def __init__(self) -> None:
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.002)

    def __enter__(self) -> RssSampler:
        self.base = self.rss()
        self.peak = self.base
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self.rss())


@dataclass
class Health:
    """What the store's history left behind in the tables the candidate query reads."""

    autovacuum: str
    lines: list[str]


PG_HEALTH = """SELECT s.relname, s.n_live_tup, s.n_dead_tup, s.n_tup_ins, s.n_tup_upd,
    s.n_tup_hot_upd, s.last_autovacuum, s.autovacuum_count, s.last_autoanalyze,
    s.autoanalyze_count, s.last_vacuum, s.last_analyze, pg_relation_size(s.relid) AS heap
    FROM pg_stat_user_tables s WHERE s.schemaname = %s AND s.relname IN ('rl_resources', 'rl_runs')
    ORDER BY s.relname"""
PG_INDEXES = """SELECT i.indexrelname, pg_relation_size(i.indexrelid) AS size
    FROM pg_stat_user_indexes i WHERE i.schemaname = %s AND i.relname = 'rl_resources'
    ORDER BY i.indexrelname"""
SQLITE_PAGES = f"""SELECT name, COUNT(*) AS pages, SUM(pgsize - unused) * 1.0 / SUM(pgsize)
    FROM dbstat WHERE name IN ('rl_resources', '{OPEN_INDEX_NAME}', 'rl_runs')
    GROUP BY name ORDER BY name"""


def health(engine: str, conn: Any, schema: str) -> Health:
    """PostgreSQL: live and dead tuples, inserts, updates (HOT or not), sizes, and whether
    autovacuum or autoanalyze ever ran (the server's counters, which lag a second behind the
    writers). SQLite: pages and how full they are (dbstat), and free pages."""
    if engine != "postgres":
        pages = ", ".join(
            f"{name} {count:,} ({100 * fill:.0f} % full)"
            for name, count, fill in conn.execute(SQLITE_PAGES).fetchall()
        )
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        return Health("none (SQLite)", [f"pages: {pages}; free pages in the file {free:,}"])
    setting = str(conn.execute("SELECT current_setting('autovacuum')").fetchone()[0])
    lines = []
    for r in conn.execute(PG_HEALTH, [schema]).fetchall():
        ran = f"last_autovacuum {r[6] or 'never'} ({r[7]}x), last_autoanalyze {r[8] or 'never'}"
        manual = f", last_vacuum {r[10] or 'never'}, last_analyze {r[11] or 'never'}"
        lines.append(
            f"{r[0]}: n_live_tup {r[1]:,}, n_dead_tup {r[2]:,} (n_tup_ins {r[3]:,}, "
            f"n_tup_upd {r[4]:,} of which HOT {r[5]:,}), heap {r[12] / 1e6:.1f} MB; "
            f"{ran} ({r[9]}x){manual}"
        )
    sizes = conn.execute(PG_INDEXES, [schema]).fetchall()
    lines.append("rl_resources indexes: " + ", ".join(f"{n} {s / 1e6:.2f} MB" for n, s in sizes))
    return Health(setting, lines)

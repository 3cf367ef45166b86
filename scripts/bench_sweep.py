"""Benchmark of the cleanup sweep: throughput against a raw-SQL floor, candidate-query cost
against the size of the given-back history, and the sweep's peak memory.

Run it from the project root, for example::

    .venv/bin/python scripts/bench_sweep.py --store postgres --runs 200 --entries 50
    .venv/bin/python scripts/bench_sweep.py --store sqlite --runs 200 --entries 50

It is a script, not a test: it prints figures and changes nothing outside a fresh SQLite file
under /tmp or a fresh PostgreSQL schema, both removed at the end (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import os
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

import runledger.application.services.give_back as cleanup_module
from runledger.application.bootstrap import Runledger, bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings

PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ACTION = "bench.spawn"
MODULE = "bench"
# give_back calls the name it imported: the meter patches that binding (patching
# modules.deadline would not reach it), so the name is looked up rather than an attribute.
DEADLINE = "call_with_deadline"


# --------------------------------------------------------------------------- stores


@dataclass
class Store:
    """A fresh, initialised store of one engine, and how to reach it without the library."""

    engine: str
    url: str
    admin: str = ""
    schema: str = ""
    path: Path | None = None

    @classmethod
    def create(cls, engine: str, admin: str) -> Store:
        if engine == "sqlite":
            folder = Path(tempfile.mkdtemp(prefix="rl_bench_", dir="/tmp"))
            path = folder / "ledger.sqlite3"
            store = cls(engine, f"sqlite:///{path}", path=path)
        else:
            schema = f"rl_bench_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            store = cls(engine, f"{admin}?schema={schema}", admin=admin, schema=schema)
        init_store(Settings(database_url=store.url))
        return store

    def drop(self) -> None:
        if self.engine == "sqlite" and self.path is not None:
            shutil.rmtree(self.path.parent, ignore_errors=True)
        elif self.schema:
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    def folder(self) -> Path:
        """The SQLite store's own temporary folder (only a SQLite store has one)."""
        if self.path is None:
            raise SystemExit(f"{self.describe()} has no folder")
        return self.path.parent

    def table(self, name: str) -> str:
        return f'"{self.schema}".{name}' if self.engine == "postgres" else name

    @contextlib.contextmanager
    def raw(self) -> Iterator[Any]:
        """A plain driver connection to the same database (psycopg or sqlite3)."""
        if self.engine == "postgres":
            with psycopg.connect(self.admin) as conn:
                yield conn
        else:
            db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30)
            try:
                yield db
            finally:
                db.close()

    def describe(self) -> str:
        if self.engine == "postgres":
            return f"PostgreSQL schema {self.schema} ({self.admin})"
        return f"SQLite file {self.path}"


def make_registry() -> Registry:
    """One module whose revert gives everything back at once."""
    registry = Registry()
    registry.module(MODULE).action(ACTION, perform=names, revert=lambda **_: {"ok": True})
    return registry


def settings_for(store: Store, args: argparse.Namespace) -> Settings:
    given: dict[str, Any] = {"database_url": store.url}
    if args.run_batch:
        given["cleanup_run_batch"] = args.run_batch
    if args.groups_per_run:
        given["cleanup_groups_per_run"] = args.groups_per_run
    return Settings(**given)


def names(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
    """A perform that names the creatures its step's params list."""
    return {"ok": True, "resources": [{"kind": "creature", "ref": r} for r in params["refs"]]}


def ledger_runs(rl: Runledger, runs: int, entries: int, per_step: int, tag: str) -> list[Any]:
    """Runs through the application: started from a spec of one manual phase whose steps each
    name ``per_step`` creatures, dispatched, then completed by a person. Answers the run ids."""
    ids = []
    for i in range(runs):
        steps = [
            {
                "id": f"step-{step}",
                "action": ACTION,
                "params": {
                    "refs": [f"{tag}-{i}-{step}-{j}" for j in range(min(per_step, entries - start))]
                },
            }
            for step, start in enumerate(range(0, entries, per_step))
        ]
        phase = {"id": "p", "advance": "manual", "steps": steps}
        ids.append(rl.runs.start({"name": f"{tag}-{i}", "phases": [phase]}))
    while rl.runs.advance_leg("bench").dispatched:
        pass
    for run in ids:
        rl.runs.advance(run, "bench")
    rl.projector.catch_up()
    return ids


def sweep_until_done(rl: Runledger, worker: str = "bench") -> int:
    """Sweep until a pass finds no candidate; answers how many passes ran (the last is empty)."""
    passes = 0
    while True:
        passes += 1
        if not rl.cleanup.sweep(worker):
            return passes


def count_status(store: Store, status: str) -> int:
    mark = "%s" if store.engine == "postgres" else "?"
    with store.raw() as conn:
        row = conn.execute(
            f"SELECT COUNT(*) FROM {store.table('rl_resources')} WHERE status = {mark}", [status]
        ).fetchone()
    return int(row[0])


# --------------------------------------------------------------------------- instrumentation


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
        timed(meter, "module revert calls (thread per call)", original_call),
    )
    queries = rl.queries
    # run() answers through runs(): wrapping runs() alone counts each read once.
    wrapped = [
        n
        for n in ("candidate_runs", "runs", "retryable_entries", "retryable_entries_of")
        if hasattr(queries, n)
    ]
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


# --------------------------------------------------------------------------- raw baseline


def raw_baseline(store: Store, txns: list[int], state_size: int) -> float:
    """Write the same rows in the same transactions with the plain driver; answers seconds.

    Each row is shaped like a stored event (uuid, version, topic, a state blob of the sweep's
    mean size) into a table with the same kind of keys (serial id, unique (uuid, version))."""
    blob = b"x" * state_size
    topic = "runledger.domain.resource:Resource.Reverted"
    rows_per_txn = [[(uuid.uuid4(), 1, topic, blob) for _ in range(n)] for n in txns]
    if store.engine == "postgres":
        table = store.table("raw_baseline")
        with psycopg.connect(store.admin) as conn:
            conn.execute(
                f"CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, k UUID NOT NULL, "
                "v INTEGER NOT NULL, topic TEXT NOT NULL, state BYTEA NOT NULL, UNIQUE (k, v))"
            )
            conn.commit()
            statement = f"INSERT INTO {table} (k, v, topic, state) VALUES (%s, %s, %s, %s)"
            start = time.perf_counter()
            for rows in rows_per_txn:
                with conn.cursor() as cursor:
                    if rows:
                        cursor.executemany(statement, rows)
                conn.commit()
            return time.perf_counter() - start
    db = sqlite3.connect(str(store.folder() / "raw_baseline.sqlite3"), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE raw_baseline (id INTEGER PRIMARY KEY, k TEXT NOT NULL, "
            "v INTEGER NOT NULL, topic TEXT NOT NULL, state BLOB NOT NULL, UNIQUE (k, v))"
        )
        statement = "INSERT INTO raw_baseline (k, v, topic, state) VALUES (?, ?, ?, ?)"
        hex_rows = [[(k.hex, v, t, s) for k, v, t, s in rows] for rows in rows_per_txn]
        start = time.perf_counter()
        for lite_rows in hex_rows:
            db.execute("BEGIN")
            if lite_rows:
                db.executemany(statement, lite_rows)
            db.execute("COMMIT")
        return time.perf_counter() - start
    finally:
        db.close()


# --------------------------------------------------------------------------- part 1


@dataclass
class Throughput:
    setup: float
    live: int
    passes: int
    elapsed: float
    cpu: float
    reverted: int
    baseline: float
    meter: Meter
    settings: Settings
    profiler: cProfile.Profile | None

    @property
    def ours(self) -> float:
        return self.reverted / self.elapsed

    @property
    def raw(self) -> float:
        return self.reverted / self.baseline


def throughput_once(args: argparse.Namespace) -> Throughput:
    """One fresh store: ledger the runs (not timed), sweep them all (timed), then the raw
    baseline replaying the sweep's write transactions."""
    store = Store.create(args.store, args.pg_url)
    try:
        settings = settings_for(store, args)
        rl = bootstrap(settings, make_registry())
        with rl:
            t0 = time.perf_counter()
            ledger_runs(rl, args.runs, args.entries, args.per_step, "r")
            setup = time.perf_counter() - t0
            live = count_status(store, "live")
            meter = Meter()
            restore = instrument(rl, meter)
            profiler = cProfile.Profile() if args.profile else None
            gc.collect()
            start, cpu = time.perf_counter(), time.process_time()
            if profiler:
                profiler.enable()
            passes = sweep_until_done(rl)
            if profiler:
                profiler.disable()
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            restore()
            reverted = count_status(store, "reverted")
        baseline = raw_baseline(
            store, meter.write_txns, meter.state_bytes // max(meter.save_events, 1)
        )
    finally:
        if not args.keep:
            store.drop()
    return Throughput(
        setup, live, passes, elapsed, cpu, reverted, baseline, meter, settings, profiler
    )


def part_throughput(args: argparse.Namespace) -> None:
    groups_per_run = -(-args.entries // args.per_step)
    print(
        f"\n== 1. sweep throughput: {args.runs} runs x {args.entries} entries "
        f"({args.per_step} per step, {groups_per_run} revert calls per run) on {args.store}, "
        f"{args.repeat} repetition(s), each on a fresh store"
    )
    results = []
    for i in range(args.repeat):
        r = throughput_once(args)
        results.append(r)
        print(
            f"   rep {i + 1}: OURS {r.ours:7,.0f} entries/s ({r.elapsed:5.2f} s wall, "
            f"{r.cpu:5.2f} s client CPU) | BASELINE {r.raw:7,.0f} entries/s equivalent "
            f"({r.baseline:4.2f} s) | ratio {r.ours / r.raw:4.2f} | load avg "
            f"{os.getloadavg()[0]:.1f}"
        )
    ranked = sorted(results, key=lambda x: x.ours)
    r = ranked[len(ranked) // 2]
    meter, settings = r.meter, r.settings
    rows = sum(meter.write_txns)
    print(
        f"   settings: cleanup_run_batch={settings.cleanup_run_batch}, "
        f"cleanup_groups_per_run={settings.cleanup_groups_per_run}, "
        f"max_revert_attempts={settings.max_revert_attempts} "
        f"({'given' if args.run_batch or args.groups_per_run else 'the Settings defaults'})"
    )
    print(
        f"   setup through the application (not timed): {r.setup:.1f} s, "
        f"{r.live} live entries to give back"
    )
    print(f"   sweep: {r.passes} passes (the last found nothing), {r.reverted} entries reverted")
    best = ranked[-1]
    print(
        f"   OURS      {r.ours:10,.0f} entries given back / s (median; best {best.ours:,.0f}; "
        f"client CPU {1e6 * r.cpu / r.reverted:.0f} us per entry)"
    )
    mean_state = meter.state_bytes // max(meter.save_events, 1)
    print(
        f"   write transactions: {len(meter.write_txns)} = {meter.saves} app.save "
        f"({meter.save_events} events, mean state {mean_state} B) + {meter.pages} projector "
        f"pages; {rows} rows written in all "
        f"({rows - meter.save_events} projection/tracking rows); {meter.reads} read-only "
        "projection transactions besides"
    )
    driver = "psycopg executemany" if args.store == "postgres" else "sqlite3 executemany (WAL)"
    print(
        f"   BASELINE  {r.raw:10,.0f} entries / s equivalent: {driver}, the same "
        f"{rows} rows in the same {len(meter.write_txns)} transactions took {r.baseline:.2f} s"
    )
    ratios = sorted(x.ours / x.raw for x in results)
    print(
        f"   ratio ours/baseline (throughput): {r.ours / r.raw:.2f}  "
        f"(time: {r.elapsed / r.baseline:.1f}x the raw floor; all reps "
        f"{', '.join(f'{x:.2f}' for x in ratios)})"
    )
    print(
        "   where that sweep's time went (wrapped calls; wall, then the sweep thread's own CPU,"
        " the rest of wall being the database and waiting):"
    )
    for label, seconds in sorted(meter.seconds.items(), key=lambda kv: -kv[1]):
        calls = meter.calls.get(label, meter.saves if label.startswith("app.save") else 0)
        print(
            f"     {label:42s} {seconds:6.2f} s {100 * seconds / r.elapsed:5.1f} %  "
            f"CPU {meter.cpu[label]:5.2f} s = {1e6 * meter.cpu[label] / r.reverted:4.0f} us/entry"
            f"  {calls:5d} calls"
        )
    accounted = sum(meter.seconds.values())
    print(
        f"     {'rest (grouping, domain, verdicts, pydantic)':42s} "
        f"{r.elapsed - accounted:6.2f} s {100 * (r.elapsed - accounted) / r.elapsed:5.1f} %"
    )
    if r.profiler:
        out = io.StringIO()
        stats = pstats.Stats(r.profiler, stream=out)
        stats.sort_stats("tottime").print_stats(args.profile_top)
        stats.sort_stats("cumulative").print_stats(args.profile_top)
        path = Path(tempfile.gettempdir()) / f"bench_sweep_{args.store}.pstats"
        stats.dump_stats(str(path))
        print(f"   cProfile (sweep only, slows it ~2x; {path} holds the full profile):")
        print(out.getvalue())


# --------------------------------------------------------------------------- parts 2 and 3


def random_id(seed: str, n: int) -> str:
    """A uuid4-shaped id, reproducible, spread over the key space like real run and entry ids."""
    return str(uuid.UUID(int=random.Random(f"{seed}{n}").getrandbits(128), version=4))


def template(store: Store, table: str, where: str) -> dict[str, Any]:
    """One real row of a projection table, to clone: history keeps whatever columns the view
    has today."""
    with store.raw() as conn:
        cursor = conn.execute(f"SELECT * FROM {store.table(table)} WHERE {where} LIMIT 1")
        names = [d[0] for d in cursor.description]
        row = cursor.fetchone()
    if row is None:
        raise SystemExit(f"no {table} row matches {where}: cannot shape history rows")
    return dict(zip(names, row, strict=True))


def history_rows(
    shape: dict[str, Any], first: int, count: int, per_run: int, at: float
) -> Iterator[tuple[Any, ...]]:
    """Entries already given back, as the resources view holds them (a reverted row cloned,
    with its own id, run, ref and key)."""
    draw = random.Random(first).getrandbits
    names = list(shape)
    base = [shape[c] for c in names]
    i_entry, i_run, i_ref = names.index("entry_id"), names.index("run_id"), names.index("ref")
    i_key = names.index("idempotency_key")
    stamps = [names.index(c) for c in ("recorded_at", "updated_at") if c in names]
    for i in stamps:
        base[i] = at
    index, run = -1, ""
    for n in range(first, first + count):
        if n // per_run != index:
            index = n // per_run
            run = random_id("run", index)
        row = base.copy()
        row[i_entry] = str(uuid.UUID(int=draw(128), version=4))
        row[i_run], row[i_ref], row[i_key] = run, f"h{n}", f"{run}|0"
        yield tuple(row)


def history_runs(
    shape: dict[str, Any], first: int, count: int, at: float
) -> Iterator[tuple[Any, ...]]:
    names = list(shape)
    base = [shape[c] for c in names]
    for c in ("started_at", "ended_at"):
        if c in names:
            base[names.index(c)] = at
    i_run, i_name = names.index("run_id"), names.index("name")
    for n in range(first, first + count):
        row = base.copy()
        row[i_run], row[i_name] = random_id("run", n), f"history-{n}"
        yield tuple(row)


def add_history(store: Store, have: int, want: int, per_run: int) -> float:
    """Insert given-back history straight into the projection tables; answers seconds."""
    count = want - have
    if count <= 0:
        return 0.0
    at = time.time() - 86_400
    first_run, last_run = -(-have // per_run), -(-want // per_run)
    entry = template(store, "rl_resources", "status = 'reverted'")
    run = template(store, "rl_runs", "status = 'completed'")
    resources = history_rows(entry, have, count, per_run, at)
    runs = history_runs(run, first_run, last_run - first_run, at)
    start = time.perf_counter()
    with store.raw() as conn:
        if store.engine == "postgres":
            with conn.cursor() as cursor:
                for table, shape, rows in (
                    ("rl_resources", entry, resources),
                    ("rl_runs", run, runs),
                ):
                    copy = f"COPY {store.table(table)} ({', '.join(shape)}) FROM STDIN"
                    with cursor.copy(copy) as sink:
                        for row in rows:
                            sink.write_row(row)
            conn.commit()
            conn.execute(f"ANALYZE {store.table('rl_resources')}")
            conn.execute(f"ANALYZE {store.table('rl_runs')}")
            conn.commit()
        else:
            conn.execute("BEGIN")
            for table, shape, rows in (("rl_resources", entry, resources), ("rl_runs", run, runs)):
                conn.executemany(
                    f"INSERT INTO {table} ({', '.join(shape)}) "
                    f"VALUES ({', '.join('?' * len(shape))})",
                    rows,
                )
            conn.execute("COMMIT")
    return time.perf_counter() - start


def capture_candidate_sql(rl: Runledger) -> tuple[str, list[Any]]:
    """The exact statement and parameters candidate_runs sends, for EXPLAIN."""
    seen: list[tuple[str, list[Any]]] = []
    original = rl.backend.transaction

    @contextlib.contextmanager
    def transaction(*, commit: bool) -> Iterator[Any]:
        with original(commit=commit) as cursor:

            class Spy:
                def execute(self, statement: Any, params: Any = None) -> Any:
                    seen.append((statement, list(params or [])))
                    return cursor.execute(statement, params)

                def __getattr__(self, name: str) -> Any:
                    return getattr(cursor, name)

            yield Spy()

    rl.backend.transaction = transaction  # type: ignore[method-assign]
    try:
        rl.queries.candidate_runs(rl.clock(), rl.settings.max_revert_attempts, 10)
    finally:
        del rl.backend.transaction
    return seen[-1]


def explain(store: Store, statement: str, params: list[Any]) -> str:
    with store.raw() as conn:
        if store.engine == "postgres":
            rows = conn.execute(f"EXPLAIN ANALYZE {statement}", params).fetchall()
            return "\n".join(f"      {r[0]}" for r in rows)
        rows = conn.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
        return "\n".join(f"      {r[-1]}" for r in rows)


def time_candidates(rl: Runledger, reps: int) -> tuple[float, float, int]:
    now = rl.clock()
    limit, attempts = rl.settings.cleanup_run_batch, rl.settings.max_revert_attempts
    found = rl.queries.candidate_runs(now, attempts, limit)
    rl.queries.candidate_runs(now, attempts, limit)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        rl.queries.candidate_runs(now, attempts, limit)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), len(found)


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
class Size:
    history: int
    load_s: float
    median: float
    best: float
    found: int
    plan: str
    open_entries: int
    swept: int
    seconds: float
    traced_peak: int
    rss_delta: int


def part_history(args: argparse.Namespace) -> None:
    store = Store.create(args.store, args.pg_url)
    sizes: list[Size] = []
    try:
        settings = settings_for(store, args)
        rl = bootstrap(settings, make_registry())
        with rl:
            # Warm every lazy import, cache and pool connection before anything is measured.
            ledger_runs(rl, 2, args.entries, args.per_step, "warm")
            sweep_until_done(rl)
            have = 0
            for want in (args.small, args.large):
                ledger_runs(rl, args.open_runs, args.entries, args.per_step, f"open{want}")
                load = add_history(store, have, want, args.entries)
                have = want
                median, best, found = time_candidates(rl, args.reps)
                statement, params = capture_candidate_sql(rl)
                plan = explain(store, statement, params)
                open_entries = count_status(store, "live")
                gc.collect()
                tracemalloc.start()
                tracemalloc.reset_peak()
                with RssSampler() as rss:
                    start = time.perf_counter()
                    sweep_until_done(rl)
                    seconds = time.perf_counter() - start
                _, traced = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                swept = open_entries - count_status(store, "live")
                sizes.append(
                    Size(
                        want,
                        load,
                        median,
                        best,
                        found,
                        plan,
                        open_entries,
                        swept,
                        seconds,
                        traced,
                        rss.peak - rss.base,
                    )
                )
    finally:
        if not args.keep:
            store.drop()

    small, large = sizes
    print(f"\n== 2. candidate query (queries.candidate_runs, the real one) on {args.store}")
    print(
        "   history: entries already given back (status 'reverted', with their completed runs)"
        " were written straight into the projection tables rl_resources/rl_runs with "
        f"{'COPY + ANALYZE' if args.store == 'postgres' else 'executemany'}; they stand for "
        "past runs. Open work beside them: "
        f"{args.open_runs} completed runs x {args.entries} live entries made through the "
        "application."
    )
    for s in sizes:
        print(
            f"   {s.history:>9,} given back (loaded in {s.load_s:5.1f} s): median "
            f"{s.median * 1e3:7.3f} ms, best {s.best * 1e3:7.3f} ms over {args.reps} reps, "
            f"{s.found} candidate runs found"
        )
    print(
        f"   ratio {large.history:,} / {small.history:,}: median "
        f"{large.median / small.median:.2f}, best {large.best / small.best:.2f}"
    )
    for s in sizes:
        how = "EXPLAIN ANALYZE" if args.store == "postgres" else "EXPLAIN QUERY PLAN"
        print(f"   plan at {s.history:,} ({how}):\n{s.plan}")

    print(f"\n== 3. sweep peak memory, same open work, two store sizes, on {args.store}")
    for s in sizes:
        print(
            f"   {s.history:>9,} given back: swept {s.swept} of {s.open_entries} live entries "
            f"in {s.seconds:.2f} s (under tracemalloc); tracemalloc peak "
            f"{s.traced_peak / 1e6:6.2f} MB, RSS peak delta {s.rss_delta / 1e6:6.2f} MB"
        )
    print(
        f"   ratio {large.history:,} / {small.history:,}: tracemalloc peak "
        f"{large.traced_peak / max(small.traced_peak, 1):.2f}"
    )


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--runs", type=int, default=200, help="part 1: runs to give back")
    parser.add_argument("--entries", type=int, default=50, help="entries per run")
    parser.add_argument("--per-step", type=int, default=25, help="entries per step (one call)")
    parser.add_argument(
        "--run-batch", type=int, default=0, help="cleanup_run_batch (default: the Settings default)"
    )
    parser.add_argument(
        "--groups-per-run",
        type=int,
        default=0,
        help="cleanup_groups_per_run (default: the Settings default)",
    )
    parser.add_argument("--small", type=int, default=10_000, help="part 2: smaller history")
    parser.add_argument("--large", type=int, default=1_000_000, help="part 2: larger history")
    parser.add_argument("--open-runs", type=int, default=5, help="parts 2-3: open runs")
    parser.add_argument("--reps", type=int, default=15, help="part 2: timed repetitions")
    parser.add_argument("--repeat", type=int, default=3, help="part 1: repetitions")
    parser.add_argument("--parts", default="123", help="which parts to run, e.g. 1 or 23")
    parser.add_argument("--profile", action="store_true", help="cProfile part 1's sweep")
    parser.add_argument("--profile-top", type=int, default=30)
    parser.add_argument("--pg-url", default=PG_ADMIN, help="PostgreSQL database (admin) URL")
    parser.add_argument("--keep", action="store_true", help="keep the stores for inspection")
    args = parser.parse_args(argv)
    print(
        f"runledger sweep benchmark: {args.store}, python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    if "1" in args.parts:
        part_throughput(args)
    if "2" in args.parts or "3" in args.parts:
        part_history(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

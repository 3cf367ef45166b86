"""Part 2 of bench_sweep: the candidate query's cost against the size of the given-back
history, with its plan."""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sweep_world import (
    Store,
    count_status,
    ledger_runs,
    make_registry,
    settings_for,
    sweep_until_done,
)

from runledger.application.bootstrap import Runledger, bootstrap


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


@dataclass
class Size:
    history: int
    load_s: float
    median: float
    best: float
    found: int
    plan: str


def part_history(args: argparse.Namespace) -> None:
    store = Store.create(args.store, args.pg_url)
    sizes: list[Size] = []
    try:
        rl = bootstrap(settings_for(store, args), make_registry())
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
                sizes.append(Size(want, load, median, best, found, plan))
                sweep_until_done(rl)
                if count_status(store, "live"):
                    raise SystemExit("the sweep left live entries behind")
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

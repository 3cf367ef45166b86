"""Part 2 of bench_sweep: the candidate query's cost against the size of the given-back history
written by real work (sweep_rounds.py), beside the same query sent in plain SQL on the same
tables, with its plan and what the history left in the tables (dead tuples, pages)."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg

from runledger.application.bootstrap import bootstrap
from runledger.application.runledger import Runledger
from runledger.projections.statements import CANDIDATES
from scripts.sweep_meter import OPEN_INDEX_NAME, Health, health
from scripts.sweep_rounds import TAG, Replay, Sent, Written, real_round, real_work
from scripts.sweep_sql import Sql
from scripts.sweep_world import (
    Store,
    count_status,
    ledger_runs,
    make_registry,
    settings_for,
    sweep_until_done,
)

FAST_TOGETHER = 4
"""--replay fast: recorded rounds sharing each upsert, ~2,000 rows (a catch-up page is 2,000
events), and of the reads only the candidate query, once for them: the read that scans the
open-entries index, marking the entries of dead rows it meets (as the query does every pass)."""


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
            conn.execute("SET LOCAL enable_bitmapscan = off")  # as candidate_runs reads
            rows = conn.execute(f"EXPLAIN ANALYZE {statement}", params).fetchall()
            return "\n".join(f"      {r[0]}" for r in rows)
        rows = conn.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
        return "\n".join(f"      {r[-1]}" for r in rows)


def served_by(plan: str) -> str:
    """Whether the plan reads the entries through the open-entries index, and what else."""
    indexes = sorted(set(re.findall(r"\brl_resources_\w+", plan)))
    scanned = re.search(r"Seq Scan on rl_resources\b|SCAN r$", plan, re.MULTILINE)
    verdict = "yes" if OPEN_INDEX_NAME in indexes and not scanned else "NO"
    found = ", ".join(indexes) or "no index"
    return f"{verdict} (rl_resources read through {found}{'; a full scan' if scanned else ''})"


@dataclass
class Timing:
    """Seconds per call: ours (queries.candidate_runs) and plain SQL, taken in turn."""

    first: float
    ours: list[float]
    plain: list[float]
    found: int
    load: float

    @property
    def ratio(self) -> float:
        """Ours / plain SQL as speeds: plain's median time over ours."""
        return statistics.median(self.plain) / statistics.median(self.ours)


def time_candidates(rl: Runledger, sql: Sql, reps: int) -> Timing:
    """Ours and plain SQL, the same statement with the same parameters on the same tables,
    ``reps`` times each in turn (the one going first alternates). Ours is called as the sweep
    calls it: inside the pass's one catch-up, made once before (its cost does not follow the
    history: it asks the store whether anything is new)."""
    now = rl.clock()
    limit, attempts = rl.settings.cleanup_run_batch, rl.settings.max_revert_attempts
    stamp = now.timestamp()

    def ours() -> list[str]:
        return [str(r) for r in rl.queries.candidate_runs(now, attempts, limit)]

    def plain() -> list[str]:
        return [
            str(r["run_id"])
            for r in sql.read(CANDIDATES, [stamp, attempts, stamp, stamp, limit], by_index=True)
        ]

    def timed(query: Callable[[], list[str]], into: list[float]) -> list[str]:
        start = time.perf_counter()
        found = query()
        into.append(time.perf_counter() - start)
        return found

    first: list[float] = []
    taken: dict[str, list[float]] = {"ours": [], "plain": []}
    with rl.queries.one_catch_up():
        found = timed(ours, first)
        if plain() != found:
            raise SystemExit("ours and plain SQL found different candidate runs")
        for rep in range(reps):
            order = [("ours", ours), ("plain", plain)]
            for name, query in order if rep % 2 == 0 else order[::-1]:
                timed(query, taken[name])
    return Timing(first[0], taken["ours"], taken["plain"], len(found), os.getloadavg()[0])


@dataclass
class Size:
    history: int
    real: Written
    bulk: Written
    health: Health
    timing: Timing
    plan: str
    vacuum_s: float = 0.0
    vacuumed: Timing | None = None


def plain_sql(store: Store) -> Sql:
    if store.engine == "postgres":
        return Sql.postgres(store.admin, store.schema)
    return Sql.sqlite(str(store.path))


def write(
    rl: Runledger, replay: Replay, entries: int, sent: int, args: Any
) -> tuple[Written, Written]:
    """About ``entries`` more given back: whole rounds of the recorded round replayed (after
    the ``sent`` rounds before them), then the rest, at least ``--real`` entries, through real
    work; answers both."""
    runs = max(-(-entries // args.entries), 0)
    per_round = len(replay.run_ids)
    rounds = max(runs - -(-args.real // args.entries), 0) // per_round
    if args.replay == "exact":
        bulk = replay.send(rl, rounds, sent)
    else:
        candidates = rl.backend.sql(CANDIDATES)
        bulk = replay.send(rl, rounds, sent, FAST_TOGETHER, lambda s: s == candidates)
    real = real_work(rl, runs - rounds * per_round, per_round, args, f"r{sent}-")
    return real, bulk


def vacuum(store: Store) -> float:
    """What autovacuum would have done by now on a server where it runs."""
    start = time.perf_counter()
    if store.engine == "postgres":
        with psycopg.connect(store.admin, autocommit=True) as conn:
            conn.execute(f"VACUUM {store.table('rl_resources')}, {store.table('rl_runs')}")
    else:
        with store.raw() as conn:
            conn.execute("VACUUM")
    return time.perf_counter() - start


def observe(store: Store) -> Health:
    if store.engine == "postgres":
        time.sleep(1.2)  # the writers' counters reach the server within a second of idling
    with store.raw() as conn:
        return health(store.engine, conn, store.schema)


def measure(rl: Runledger, store: Store, sql: Sql, args: Any) -> tuple[Health, Timing, str]:
    """What the tables hold, then the query timed, then its plan (EXPLAIN ANALYZE runs it:
    after the timing, so that it is not the first to meet the dead tuples)."""
    seen = observe(store)
    timing = time_candidates(rl, sql, args.reps)
    statement, params = capture_candidate_sql(rl)
    return seen, timing, explain(store, statement, params)


def part_history(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    store = Store.create(args.store, args.pg_url)
    sizes: list[Size] = []
    try:
        settings = settings_for(store, args)
        rl = bootstrap(settings, make_registry())
        with rl:
            # One real sweep's batch of runs, first in the store: it warms every import, cache
            # and connection, and all it sends to the two tables is what the replay sends again.
            sent: list[Sent] = []
            recorded = real_round(rl, settings.cleanup_run_batch, args, TAG, sent)
            replay = Replay.of(sent, args.entries)
            sql = plain_sql(store)
            rounds = 0
            for want in (args.small, args.large):
                have = count_status(store, "reverted")
                real, bulk = write(rl, replay, want - have, rounds, args)
                rounds += bulk.runs // max(len(replay.run_ids), 1)
                if not sizes:
                    real.add(recorded)
                ledger_runs(rl, args.open_runs, args.entries, args.per_step, f"open{want}-")
                history = count_status(store, "reverted")
                size = Size(history, real, bulk, *measure(rl, store, sql, args))
                if want == args.large and args.vacuum:
                    size.vacuum_s = vacuum(store)
                    size.vacuumed = time_candidates(rl, sql, args.reps)
                sizes.append(size)
                sweep_until_done(rl)
                if count_status(store, "live"):
                    raise SystemExit("the sweep left live entries behind")
            sql.close()
    finally:
        if not args.keep:
            store.drop()
    report(args, sizes, settings.cleanup_run_batch, time.perf_counter() - start)


def ms(seconds: list[float]) -> str:
    return f"median {statistics.median(seconds) * 1e3:6.3f} ms, best {min(seconds) * 1e3:6.3f} ms"


def written(w: Written) -> str:
    if not w.entries:
        return "none"
    return (
        f"{w.entries:,} entries in {w.seconds:.1f} s ({w.entries / w.seconds:,.0f}/s; per "
        f"entry: row writes rl_resources {w.per_entry('rl_resources'):.2f}, rl_runs "
        f"{w.per_entry('rl_runs'):.3f}, reads of the two {w.reads / w.entries:.3f})"
    )


def vacuumed(engine: str) -> str:
    if engine == "postgres":
        return "VACUUM of the two tables (what autovacuum would have done by now)"
    return "VACUUM (SQLite: the file rebuilt, its pages packed)"


def report(args: argparse.Namespace, sizes: list[Size], batch: int, took: float) -> None:
    print(f"\n== 2. candidate query (queries.candidate_runs, the real one) on {args.store}")
    how = (
        "every read, in the same order and transactions, one round at a time"
        if args.replay == "exact"
        else f"of the reads only the candidate query ({FAST_TOGETHER} rounds to each upsert and "
        "to each candidate query, in the recorded transactions; --replay exact sends every "
        "read, one round at a time, ~4x slower)"
    )
    print(
        f"   history: runs recorded through the application and given back by the Cleanup "
        f"service's sweeps with the instant module, {batch} runs at a time (real work); the "
        "bulk of each size replays, round after round with fresh ids, what one such real round "
        "sent to rl_runs and rl_resources: the views' upserts (backend.upsert), so every row is "
        f"inserted then updated in the same versions, and {how}; the last part of each size "
        f"(--real {args.real:,}) is real work again."
    )
    print(
        "   the replay writes no events and no rows of rl_steps or rl_run_log (the query reads "
        "neither). The script runs no VACUUM or ANALYZE before timing; autovacuum on this "
        f"server: {sizes[0].health.autovacuum}. Open work beside the history: "
        f"{args.open_runs} completed runs x {args.entries} live entries through the application."
    )
    for s in sizes:
        t = s.timing
        print(f"   {s.history:>9,} given back: replayed {written(s.bulk)}; real {written(s.real)}")
        for line in s.health.lines:
            print(f"      {line}")
        print(
            f"      first call after writing (ours) {t.first * 1e3:.3f} ms; then {args.reps} "
            f"each in turn, {t.found} candidate runs found:"
        )
        print(f"      OURS      {ms(t.ours)}")
        print(f"      PLAIN SQL {ms(t.plain)}")
        print(
            f"      ratio ours / plain SQL (speed, medians) at {s.history:,}: {t.ratio:.2f} "
            f"(load {t.load:.1f})"
        )
        if s.vacuumed is not None:
            v = s.vacuumed
            print(
                f"      after {vacuumed(args.store)} ({s.vacuum_s:.1f} s): "
                f"OURS {ms(v.ours)} | PLAIN SQL {ms(v.plain)} | ratio {v.ratio:.2f} "
                f"(load {v.load:.1f})"
            )
    small, large = sizes[0].timing, sizes[-1].timing
    print(
        f"   ratio {sizes[-1].history:,} / {sizes[0].history:,} given back (our median time): "
        f"{statistics.median(large.ours) / statistics.median(small.ours):.2f}; plain SQL "
        f"{statistics.median(large.plain) / statistics.median(small.plain):.2f} (flat is 1)"
    )
    how = "EXPLAIN ANALYZE" if args.store == "postgres" else "EXPLAIN QUERY PLAN"
    for s in sizes:
        print(f"   served by the open-entries index at {s.history:,}: {served_by(s.plan)}")
        print(f"   plan at {s.history:,} ({how}):\n{s.plan}")
    print(f"   part 2 took {took:.0f} s in all")

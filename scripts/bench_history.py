"""Benchmark of the operator tools: rebuild memory against store size, replay time against
store size, and stepping's reads. Rebuild throughput: scripts/bench_rebuild.py.

    .venv/bin/python -m scripts.bench_history --store sqlite --events 1000000
    .venv/bin/python -m scripts.bench_history --store postgres --events 1000000

A script, not a test: it builds a fresh SQLite file under /tmp or a fresh PostgreSQL schema,
prints figures side by side, and removes the store at the end.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.projections.rebuild import rebuild

PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def fresh_store(engine: str) -> tuple[str, Callable[[], None]]:
    if engine == "sqlite":
        folder = Path(tempfile.mkdtemp(prefix="rl-bench-"))
        return f"sqlite:///{folder / 'ledger.sqlite3'}", lambda: _rmtree(folder)
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")

    def drop() -> None:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

    return f"{PG_ADMIN}?schema={schema}", drop


def _rmtree(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def given_back_run(entries: int, at: datetime, failures: int = 0) -> list[Any]:
    """One finished run whose entries were each claimed and given back (some after a retry)."""
    run = Run.start(uuid.uuid4(), "bench", at)
    made: list[Any] = [run]
    for i in range(entries):
        entry = Resource(
            run_id=run.id,
            step=f"s{i // 25}",
            kind="creature",
            ref=f"c{i}",
            module="bench",
            action="bench.spawn",
            idempotency_key=f"k{i // 25}",
            payload={"hp": i},
            member_key=None,
            until=None,
            at=at,
        )
        for attempt in range(1, failures + 2):
            entry.claim_revert("bench", at, at + timedelta(seconds=30), 5)
            if attempt <= failures:
                entry.fail_revert("bench", attempt, "retry", "the shard hiccuped", at)
            else:
                entry.mark_reverted("bench", attempt, at)
        made.append(entry)
    run.complete(at)
    return made


def populate(rl: Runledger, events: int) -> int:
    """About ``events`` events of history, saved a thousand aggregates at a time."""
    written = 0
    while written < events:
        batch = given_back_run(250, NOW - timedelta(days=1))
        rl.app.save(*batch)
        written += 2 + 250 * 3
    return written


def rebuild_peak_mb(rl: Runledger) -> float:
    gc.collect()
    tracemalloc.start()
    rebuild(rl.app, rl.backend)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def replay_seconds(rl: Runledger, run_id: uuid.UUID, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        replay = rl.history.replay(run_id)
        times.append(time.perf_counter() - started)
        assert replay.cleanup_status == "complete", replay.cleanup_status
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--events", type=int, default=300_000)
    args = parser.parse_args()
    url, drop = fresh_store(args.store)
    try:
        settings = Settings(database_url=url)
        init_store(settings)
        with bootstrap(settings, Registry(), clock=lambda: NOW) as rl:
            measure(rl, args.store, args.events)
    finally:
        drop()


def measure(rl: Runledger, store: str, events: int) -> None:
    print(f"{store}: {events:,} events of history")
    target = given_back_run(1_000, NOW, failures=1)
    rl.app.save(*target)
    rl.projector.catch_up()
    small_replay = replay_seconds(rl, target[0].id)
    started = time.perf_counter()
    written = populate(rl, events // 4)
    rl.projector.catch_up()
    quarter = rl.app.recorder.max_notification_id() or 0
    small_peak = rebuild_peak_mb(rl)
    written += populate(rl, events - written)
    print(f"  wrote {written:,} events in {time.perf_counter() - started:.1f}s (setup)")
    rl.projector.catch_up()

    # Rebuild throughput is timed end to end from a cold start by scripts/bench_rebuild.py;
    # here, in a warm process, it would flatter.
    count = rl.app.recorder.max_notification_id() or 0
    big_peak = rebuild_peak_mb(rl)
    print(
        f"  rebuild peak   {small_peak:>10.1f} MB at {quarter:,} events, "
        f"{big_peak:.1f} MB at {count:,} events"
    )
    big_replay = replay_seconds(rl, target[0].id)
    print(
        f"  replay of a 1,000-entry run ({1 + 1_000 * 5 + 1:,} events): "
        f"{small_replay * 1000:.0f} ms alone, {big_replay * 1000:.0f} ms beside "
        f"{count:,} events (ratio {big_replay / small_replay:.2f})"
    )
    entry = target[1].id
    versions = len(list(rl.app.events.get(entry)))
    stepped = rl.history.step(entry, upto=2)
    print(f"  step to version 2 of {versions}: {len(stepped.frames)} events read")


if __name__ == "__main__":
    main()

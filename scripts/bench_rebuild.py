"""Benchmark of `runledger rebuild`, end to end from a cold start, beside a raw read of the same
events, and its peak memory at two store sizes.

    .venv/bin/python scripts/bench_rebuild.py                       # both stores, default size
    .venv/bin/python scripts/bench_rebuild.py --store postgres --events 2000000 --repeat 3
    .venv/bin/python scripts/bench_rebuild.py --store sqlite --profile /tmp/rebuild.prof

What is timed, for each engine, each in a fresh Python process with a fresh connection:

- ours: `rebuild()` of every view, from its first statement to its last: prepare (the shadow
  tables), the replay from position zero, and the swap (indexes built, tables renamed, the live
  tracking moved), as `runledger rebuild` runs it;
- the baseline: a raw read of the same events (the columns the rebuild reads, in pages of the
  rebuild's size, kept in Python tuples and dropped), through the driver alone.

"Cold" here means a new process (no Python module, topic or class cache, no prepared statement)
and a new connection (PostgreSQL's per-backend catalog and plan caches empty). The operating
system's page cache and PostgreSQL's shared buffers cannot be dropped on a shared machine: both
runs read from whatever they hold, equally. The two runs alternate, `--repeat` times each, and
the best of each is compared (the machine is shared: the load is printed beside every figure).

The history is written through the domain: runs whose steps record entries, and whose entries
are given back (claimed, some failed once, reverted) `--lag` runs later, as a sweep does after
a run ends, so an entry's events lie far apart in the store and its row is written in one page
and changed in a later one, as in a real store.

A script, not a test: it builds a fresh SQLite file under /tmp or a fresh PostgreSQL schema and
removes it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ENTRIES = 200
STEPS = 8


# --------------------------------------------------------------------------- stores


def fresh_store(engine: str) -> tuple[str, Callable[[], None]]:
    if engine == "sqlite":
        folder = Path(tempfile.mkdtemp(prefix="rl-bench-rebuild-"))
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


# --------------------------------------------------------------------------- history


def started_run(number: int, at: datetime) -> tuple[Any, list[Any]]:
    """A run whose steps each recorded their entries: what a runner saves while it runs."""
    from runledger.domain.resource import Resource
    from runledger.domain.run import Run
    from runledger.domain.runlog import LogEntry
    from runledger.domain.step import Step

    run = Run.start(uuid.uuid4(), f"bench {number}", at)
    made: list[Any] = [run]
    per_step = ENTRIES // STEPS
    for s in range(STEPS):
        step = Step(run.id, f"s{s}", 1, "bench.spawn", {"n": s}, at)
        step.claim_dispatch("bench", at, at + timedelta(seconds=30))
        step.succeed("bench", per_step, at)
        made.append(step)
        for i in range(per_step):
            made.append(
                Resource(
                    run_id=run.id,
                    step=f"s{s}",
                    kind="creature",
                    ref=f"c{s}-{i}",
                    module="bench",
                    action="bench.spawn",
                    idempotency_key=f"{run.id}:s{s}",
                    payload={"hp": i, "name": f"creature {i}"},
                    member_key=None,
                    until=None,
                    at=at,
                )
            )
    detail = {"step": "s0", "entries": per_step}
    made.append(LogEntry(f"{run.id}:start", run.id, "step.recorded", detail, at))
    return run, made


def given_back(run: Any, entries: list[Any], at: datetime) -> list[Any]:
    """The sweep of an ended run: each entry claimed and reverted, one in ten after a retry."""
    from runledger.domain.runlog import LogEntry

    later = at + timedelta(minutes=5)
    for n, entry in enumerate(entries):
        entry.claim_revert("bench", later, later + timedelta(seconds=30), 5)
        if n % 10 == 0:
            entry.fail_revert("bench", 1, "retry", "the shard hiccuped", later)
            entry.claim_revert("bench", later, later + timedelta(seconds=30), 5)
            entry.mark_reverted("bench", 2, later)
        else:
            entry.mark_reverted("bench", 1, later)
    run.complete(later)
    line = LogEntry(f"{run.id}:swept", run.id, "sweep.done", {"entries": len(entries)}, later)
    return [run, *entries, line]


def populate(rl: Any, events: int, lag: int) -> int:
    """About ``events`` more events: a run saved as it runs, and the run ``lag`` runs before it
    given back, so the events of each entry lie ``lag`` runs apart in the store."""
    from runledger.domain.resource import Resource

    start = head = rl.app.recorder.max_notification_id() or 0
    number, waiting = 0, list[tuple[Any, list[Any]]]()
    while head - start < events or waiting:
        if head - start < events:
            run, made = started_run(number, NOW)
            head = rl.app.save(*made)[-1].notification.id
            waiting.append((run, [a for a in made if isinstance(a, Resource)]))
            number += 1
        if len(waiting) > lag or head - start >= events:
            run, entries = waiting.pop(0)
            head = rl.app.save(*given_back(run, entries, NOW))[-1].notification.id
    return head - start


# --------------------------------------------------------------------------- children


def child_raw(url: str, table: str, page: int) -> dict[str, Any]:
    """The baseline: every event, the columns a rebuild reads, a page at a time."""
    started = time.perf_counter()
    count, position = 0, 0
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        while rows := conn.execute(
            "SELECT rowid, originator_id, originator_version, topic, state "
            f"FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
            [position, page],
        ).fetchall():
            count += len(rows)
            position = rows[-1][0]
        conn.close()
    else:
        base, _, schema = url.partition("?schema=")
        with psycopg.connect(base) as pg:
            statement = (
                "SELECT notification_id, originator_id::text, originator_version, topic, state "
                f"FROM {schema}.{table} WHERE notification_id > %s "
                "ORDER BY notification_id LIMIT %s"
            )
            while rows := pg.execute(statement, [position, page], prepare=True).fetchall():
                count += len(rows)
                position = rows[-1][0]
    return {"events": count, "seconds": time.perf_counter() - started}


def child_rebuild(url: str, profile: str | None) -> dict[str, Any]:
    from runledger.application.bootstrap import bootstrap
    from runledger.application.modules.protocol import Registry
    from runledger.application.settings import Settings
    from runledger.projections.rebuild import rebuild

    with bootstrap(Settings(database_url=url), Registry()) as rl:
        started = time.perf_counter()
        if profile:
            import cProfile

            with cProfile.Profile() as profiler:
                report = rebuild(rl.app, rl.backend)
            profiler.dump_stats(profile)
        else:
            report = rebuild(rl.app, rl.backend)
        seconds = time.perf_counter() - started
    # Older runledgers reported no phases: the benchmark also measures what came before them.
    phases = getattr(report, "phases", {})
    return {"events": report.events, "seconds": seconds, "phases": phases}


def run_child(kind: str, url: str, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--url", url, *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} child failed:\n{done.stdout}\n{done.stderr}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


# --------------------------------------------------------------------------- the benchmark


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def mb(found: dict[str, Any]) -> str:
    return f"{found['rss_kb'] / 1024:6.1f} MB"


def bench(engine: str, events: int, lag: int, repeat: int, profile: str | None) -> None:
    from runledger.application.bootstrap import bootstrap, init_store
    from runledger.application.modules.protocol import Registry
    from runledger.application.settings import Settings
    from runledger.projections.rebuild import REBUILD_PAGE

    url, drop = fresh_store(engine)
    try:
        settings = Settings(database_url=url)
        init_store(settings)
        with bootstrap(settings, Registry(), clock=lambda: NOW) as rl:
            reading = ["--table", rl.backend.events_table, "--page", str(REBUILD_PAGE)]
            started = time.perf_counter()
            small = populate(rl, events // 4, lag)
            rl.projector.catch_up()
            print(f"{engine}: wrote {small:,} events in {time.perf_counter() - started:.1f}s")
            small_rss = run_child("rebuild", url)
            small_raw = run_child("raw", url, *reading)
            total = small + populate(rl, events - small, lag)
            rl.projector.catch_up()
            print(f"{engine}: {total:,} events in all ({time.perf_counter() - started:.1f}s)")
        pairs = []
        for _ in range(repeat):
            raw = run_child("raw", url, *reading)
            ours = run_child("rebuild", url)
            pairs.append((raw, ours, load()))
            print(
                f"  {engine} raw read {raw['events'] / raw['seconds']:>9,.0f} events/s, "
                f"rebuild {ours['events'] / ours['seconds']:>8,.0f} events/s "
                f"({ours['events']:,} events in {ours['seconds']:.2f}s: "
                + ", ".join(f"{k} {v:.2f}s" for k, v in ours["phases"].items())
                + f"), {pairs[-1][2]}"
            )
        raw = max((p[0] for p in pairs), key=lambda r: r["events"] / r["seconds"])
        ours = max((p[1] for p in pairs), key=lambda r: r["events"] / r["seconds"])
        raw_rate, our_rate = raw["events"] / raw["seconds"], ours["events"] / ours["seconds"]
        print(
            f"  {engine} ratio rebuild/raw = {our_rate / raw_rate:.2f} "
            f"(rebuild {our_rate:,.0f} events/s end to end, raw read {raw_rate:,.0f} events/s; "
            f"best of {repeat}), {load()}"
        )
        print(
            f"  {engine} peak RSS ratio {ours['events']:,}/{small_rss['events']:,} events = "
            f"{ours['rss_kb'] / small_rss['rss_kb']:.2f} (rebuild {mb(small_rss)} -> {mb(ours)};"
            f" raw read {mb(small_raw)} -> {mb(raw)})"
        )
        if profile:
            run_child("rebuild", url, "--profile", f"{profile}.{engine}")
            print(f"  {engine} profile of one more rebuild written to {profile}.{engine}")
    finally:
        drop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--events", type=int, default=200_000, help="history size (the larger)")
    parser.add_argument("--lag", type=int, default=20, help="runs between a run and its sweep")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each")
    parser.add_argument("--profile", help="also cProfile one rebuild into FILE.<engine>")
    parser.add_argument("--child", choices=["raw", "rebuild"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--table", help=argparse.SUPPRESS)
    parser.add_argument("--page", type=int, default=10_000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        found = (
            child_raw(args.url, args.table, args.page)
            if args.child == "raw"
            else child_rebuild(args.url, args.profile)
        )
        found["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps(found))
        return
    print(uptime())
    for engine in ["sqlite", "postgres"] if args.store == "both" else [args.store]:
        bench(engine, args.events, args.lag, args.repeat, args.profile)
    print(uptime())


if __name__ == "__main__":
    main()

"""Benchmark of `runledger rebuild`, end to end from a cold start, beside a raw read of the same
events, and its peak memory at two store sizes.

    .venv/bin/python -m scripts.bench_rebuild                       # both stores, ~1-2 minutes
    .venv/bin/python -m scripts.bench_rebuild --store postgres --events 2000000 --repeat 3
    .venv/bin/python -m scripts.bench_rebuild --store sqlite --profile /tmp/rebuild.prof
    .venv/bin/python -m scripts.bench_rebuild --against /tmp/before/.venv/bin/python

What is timed, for each engine, each in a fresh Python process:

- ours: opening the store as `runledger rebuild` does, then `rebuild()` of every view: prepare
  (the shadow tables), the replay from position zero, and the swap (indexes built, tables
  renamed, the live tracking moved);
- the baseline: a raw read of the same events through the driver alone, from connecting to the
  last row: the columns a rebuild reads, in pages of the rebuild's size, kept as tuples (on
  PostgreSQL in the binary format, which reads a page in half the time of the text one).

"Cold" here means a new process (no imported module warmed, no topic, class or statement cache)
and a new connection (PostgreSQL's per-backend catalog and plan caches empty). The operating
system's page cache and PostgreSQL's shared buffers cannot be dropped on a shared machine: both
runs read from whatever they hold, equally. Imports are not timed, in either. The two runs
alternate, ``--repeat`` times each, and the best of each is compared; the machine is shared, so
the load is printed beside every figure.

The history is written through the domain: runs whose steps record entries, and whose entries
are given back (claimed, one in ten failed once, reverted) ``--lag`` runs later, as a sweep does
after a run ends, so an entry's events lie far apart in the store. Memory (the child's peak RSS)
is measured at half the history and at all of it: both sizes hold more rows than a
rebuild keeps in memory (ROWS_KEPT).

On a shared machine the load moves figures more than most changes do: ``--against`` runs
another runledger's rebuild (its own interpreter, a venv with it installed) in the same repeats,
alternating with ours, and prints the ratio of the two. Each rebuild line also gives the CPU time
of the rebuild's process (on PostgreSQL the server's is not in it).

A script, not a test: it builds a fresh SQLite file under /tmp or a fresh PostgreSQL schema and
removes it at the end. Run with another runledger's interpreter (its own venv), it measures that
one: the history, the baseline and the timing are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ENTRIES = 200
STEPS = 8


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
    made.append(LogEntry(f"{run.id}:start", run.id, "step.succeeded", detail, at))
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
    line = LogEntry(f"{run.id}:swept", run.id, "cleanup.swept", {"entries": len(entries)}, later)
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
            while rows := pg.execute(
                statement, [position, page], prepare=True, binary=True
            ).fetchall():
                count += len(rows)
                position = rows[-1][0]
    return {"events": count, "seconds": time.perf_counter() - started}


def child_rebuild(url: str, profile: str | None) -> dict[str, Any]:
    """Ours: open the store, as `runledger rebuild` does, and rebuild every view."""
    from runledger.application.bootstrap import bootstrap
    from runledger.application.modules.protocol import Registry
    from runledger.application.settings import Settings
    from runledger.projections.rebuild import rebuild

    started, cpu = time.perf_counter(), time.process_time()
    with bootstrap(Settings(database_url=url), Registry()) as rl:
        if profile:
            import cProfile

            with cProfile.Profile() as profiler:
                report = rebuild(rl.app, rl.backend)
            profiler.dump_stats(profile)
        else:
            report = rebuild(rl.app, rl.backend)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    # Older runledgers reported no phases: the benchmark also measures what came before them.
    phases = getattr(report, "phases", {})
    return {"events": report.events, "seconds": seconds, "cpu": cpu, "phases": phases}


def peak_rss_kb() -> int:
    """This process's peak resident memory. Not getrusage's ru_maxrss: on Linux that survives
    exec, so a child would report its parent's size (VmHWM belongs to the new image)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_child(kind: str, url: str, *extra: str, python: str | None = None) -> dict[str, Any]:
    """This file in a fresh process, run by its path: it imports nothing of the scripts package,
    so that another runledger's interpreter (``--against``) runs it on its own runledger."""
    done = subprocess.run(
        [python or sys.executable, __file__, "--child", kind, "--url", url, *extra],
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


def rate(found: dict[str, Any]) -> float:
    return float(found["events"] / found["seconds"])


def bench(
    engine: str, events: int, lag: int, repeat: int, profile: str | None, against: str | None
) -> None:
    from runledger.application.bootstrap import bootstrap, init_store
    from runledger.application.modules.protocol import Registry
    from runledger.application.settings import Settings
    from runledger.projections.rebuild import REBUILD_PAGE, rebuild

    # Here, not at the top: a child runs this file by its path (perhaps under another runledger's
    # interpreter), where the scripts package is not importable, and needs none of it.
    from scripts.bench_history import fresh_store

    url, drop = fresh_store(engine)
    try:
        settings = Settings(database_url=url)
        init_store(settings)
        with bootstrap(settings, Registry(), clock=lambda: NOW) as rl:
            reading = ["--table", rl.backend.events_table, "--page", str(REBUILD_PAGE)]
            started = time.perf_counter()
            small = populate(rl, events // 2, lag)
            rebuild(rl.app, rl.backend)  # the live tables, as catching up would make them
            small_ours = run_child("rebuild", url)
            small_raw = run_child("raw", url, *reading)
            total = small + populate(rl, events - small, lag)
            rebuild(rl.app, rl.backend)
            print(
                f"{engine}: {total:,} events of history written and projected "
                f"({time.perf_counter() - started:.0f}s of setup)"
            )
        pairs, theirs = [], []
        for _ in range(repeat):
            raw = run_child("raw", url, *reading)
            ours = run_child("rebuild", url)
            pairs.append((raw, ours))
            print(
                f"  {engine} raw read {rate(raw):>9,.0f} events/s; rebuild {rate(ours):>8,.0f} "
                f"events/s ({ours['events']:,} events in {ours['seconds']:.2f}s, "
                f"{ours['cpu']:.2f}s of CPU here: "
                + ", ".join(f"{k} {v:.2f}s" for k, v in ours["phases"].items())
                + f"); {load()}"
            )
            if against:
                other = run_child("rebuild", url, python=against)
                theirs.append(other)
                print(
                    f"  {engine} rebuild by {against}: {rate(other):>8,.0f} events/s "
                    f"({other['seconds']:.2f}s, {other.get('cpu', 0):.2f}s of CPU); {load()}"
                )
        raw = max((p[0] for p in pairs), key=rate)
        ours = max((p[1] for p in pairs), key=rate)
        print(
            f"  {engine} ratio rebuild/raw read = {rate(ours) / rate(raw):.2f} "
            f"(rebuild {rate(ours):,.0f} events/s end to end, raw read {rate(raw):,.0f} "
            f"events/s; best of {repeat} each); {load()}"
        )
        if theirs:
            other = max(theirs, key=rate)
            print(
                f"  {engine} ratio rebuild/rebuild by {against} = {rate(ours) / rate(other):.2f} "
                f"(best of {repeat} each, alternating); {load()}"
            )
        print(
            f"  {engine} peak RSS ratio at {ours['events']:,} / {small_ours['events']:,} events "
            f"= {ours['rss_kb'] / small_ours['rss_kb']:.2f} (rebuild {mb(small_ours)} -> "
            f"{mb(ours)}; raw read {mb(small_raw)} -> {mb(raw)})"
        )
        if profile:
            run_child("rebuild", url, "--profile", f"{profile}.{engine}")
            print(f"  {engine} profile of one more rebuild ({profile}.{engine}), top five:")
            top_five(f"{profile}.{engine}")
    finally:
        drop()


def top_five(path: str) -> None:
    import io
    import pstats

    out = io.StringIO()
    pstats.Stats(path, stream=out).sort_stats("tottime").print_stats(5)
    lines = out.getvalue().splitlines()
    header = next(n for n, line in enumerate(lines) if line.strip().startswith("ncalls"))
    for line in [line for line in lines[header:] if line.strip()][:6]:
        print(f"    {line.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument(
        "--events", type=int, default=150_000, help="history size; memory is also measured at half"
    )
    parser.add_argument("--lag", type=int, default=20, help="runs between a run and its sweep")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each")
    parser.add_argument("--profile", help="also cProfile one rebuild into FILE.<engine>")
    parser.add_argument(
        "--against",
        metavar="PYTHON",
        help="another runledger's interpreter: its rebuild runs too, alternating with ours",
    )
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
        found["rss_kb"] = peak_rss_kb()
        print(json.dumps(found))
        return
    print(uptime())
    for engine in ["sqlite", "postgres"] if args.store == "both" else [args.store]:
        bench(engine, args.events, args.lag, args.repeat, args.profile, args.against)
    print(uptime())


if __name__ == "__main__":
    main()

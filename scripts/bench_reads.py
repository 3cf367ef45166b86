"""Reads at scale on PostgreSQL: a runs page, one run, its log and /metrics under 20 concurrent
clients, and the console's page of a run of 1,000 entries (first byte), over a real
`runledger serve --no-runner`, each beside the in-process read of the same thing.

    python -m scripts.bench_reads [--runs 100000] [--entries 1000000] [--clients 20]
                                  [--seconds 10] [--rate 100] [--small] [--fresh] [--drop]

The clients ask two ways (scripts/loads.py says why both): as fast as answered (wrk's closed
loop: the most serve answers) and at a steady pace, --rate requests a second in all (the latency
at that load). Beside them, a plain FastAPI app doing the runs page's own work
(scripts/plain_reads.py) under the same two loads: what the HTTP stack alone allows here.

The store is written fast: the runs' events are made by the domain, encoded by the store's own
mapper and COPYed into the events table; then `rebuild` makes the views from them. At the
default sizes that takes minutes, so the store is kept in the schema `bench_reads_<runs>_<entries>`
and used again by the next run (`--fresh` builds it again, `--drop` drops it at the end).
`--small` is a quick check (3,000 runs, 30,000 entries). Needs wrk (Debian package `wrk`).

Of every 20 runs: 17 are given back, 1 has an entry failed terminally (incomplete), 1 has an
entry out of attempts under a live claim, 1 is still running. One run has 1,000 entries.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
import psycopg

from runledger.application.api.metrics import StoreCollector
from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.projections.pages import RunFilter
from runledger.projections.postgres import PostgresBackend
from runledger.projections.rebuild import rebuild
from scripts.bench_api import CLI, _wait_up, spare_port
from scripts.bench_console import signed_in
from scripts.bench_history import NOW, PG_ADMIN
from scripts.loads import first_bytes, in_process, paced, uptime, wrk

BIG = 1_000
BATCH = 2_000
"""Runs made, encoded and COPYed at a time: memory stays flat whatever the store's size."""


def made_run(n: int, entries: int, at: datetime) -> list[Any]:
    """Run number ``n`` with its entries, as a runner would have left it (the module docstring
    says which of every 20 are what)."""
    run = Run.start(uuid.uuid4(), f"bench {n}", at)
    kind = n % 20
    made: list[Any] = [run]
    for i in range(entries):
        entry = Resource(
            run_id=run.id,
            step=f"s{i // 25}",
            kind="creature",
            ref=f"c{n}-{i}",
            module="bench",
            action="bench.spawn",
            idempotency_key=f"k{n}-{i // 25}",
            payload={"hp": i},
            member_key=None,
            until=None,
            at=at,
        )
        if kind != 19:
            # 18: the first entry's claim is still out, for ten years.
            expires = at + timedelta(days=3650 if i == 0 and kind == 18 else 0, seconds=30)
            entry.claim_revert("bench", at, expires, 5)
            if i == 0 and kind == 17:
                entry.fail_revert("bench", 1, "terminal", "the shard refuses", at)
            elif not (i == 0 and kind == 18):
                entry.mark_reverted("bench", 1, at)
        made.append(entry)
    if kind != 19:
        run.complete(at)
    return made


def history(runs: int, entries: int) -> Iterator[tuple[int, list[Any]]]:
    """(runs made so far, aggregates) a batch at a time; the first run is the big one."""
    each, extra = divmod(max(entries - BIG, 0), max(runs - 1, 1))
    batch: list[Any] = []
    for n in range(runs):
        at = NOW - timedelta(seconds=runs - n)
        batch += made_run(n, BIG if n == 0 else each + (n <= extra), at)
        if (n + 1) % BATCH == 0 or n == runs - 1:
            yield n + 1, batch
            batch = []


def copy_history(rl: Runledger, runs: int, entries: int) -> int:
    backend = rl.backend
    assert isinstance(backend, PostgresBackend)
    table = f'"{backend.schema}".{backend.events_table}'
    mapper: Any = rl.app.mapper
    written = 0
    with psycopg.connect(PG_ADMIN) as conn, conn.cursor() as cur:
        for done, aggregates in history(runs, entries):
            columns = "(originator_id, originator_version, topic, state)"
            with cur.copy(f"COPY {table} {columns} FROM STDIN") as copy:
                for aggregate in aggregates:
                    for event in aggregate.collect_events():
                        stored = mapper.to_stored_event(event)
                        copy.write_row(
                            (
                                stored.originator_id,
                                stored.originator_version,
                                stored.topic,
                                stored.state,
                            )
                        )
                        written += 1
            conn.commit()
            print(f"\r  {done:,} runs, {written:,} events", end="", flush=True)
    print()
    return written


def store(runs: int, entries: int, fresh: bool) -> str:
    schema = f"bench_reads_{runs}_{entries}"
    url = f"{PG_ADMIN}?schema={schema}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        if fresh:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        exists = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name = 'rl_runs'",
            [schema],
        ).fetchone()
        if exists:
            n = conn.execute(
                f"SELECT (SELECT COUNT(*) FROM {schema}.rl_runs), "
                f"(SELECT COUNT(*) FROM {schema}.rl_resources)"
            ).fetchone()
            if n is not None and tuple(n) == (runs, entries):
                print(f"store: the schema {schema} built earlier ({runs:,} runs), used again")
                return url
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
    settings = Settings(database_url=url)
    init_store(settings)
    rl = bootstrap(settings, Registry())
    try:
        started = time.perf_counter()
        events = copy_history(rl, runs, entries)
        copied = time.perf_counter() - started
        # The live views, still empty, are marked level with the store: a rebuild first brings
        # the live views level (a page at a time, for millions of events) before it swaps its
        # own in, and here it would replace those tables at once anyway.
        head = rl.projector.head()
        with rl.backend.transaction(commit=True) as cursor:
            cursor.execute(rl.backend.sql("UPDATE {rl_tracking} SET position = %s"), [head])
        report = rebuild(rl.app, rl.backend)
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"VACUUM ANALYZE {schema}.rl_runs")
            conn.execute(f"VACUUM ANALYZE {schema}.rl_resources")
            conn.execute(f"VACUUM ANALYZE {schema}.rl_run_log")
        print(
            f"store: {runs:,} runs, {events:,} events COPYed in {copied:.0f}s, "
            f"views rebuilt in {report.seconds:.0f}s, kept in the schema {schema}"
        )
    finally:
        rl.close()
    return url


def picked(rl: Runledger) -> tuple[UUID, UUID]:
    """The big run, and an ordinary finished run in the middle of the store."""
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT run_id FROM {rl_runs} WHERE name = 'bench 0'"))
        big = UUID(cursor.fetchone()["run_id"])
        cursor.execute(
            rl.backend.sql(
                "SELECT run_id FROM {rl_runs} WHERE status = 'completed' "
                "ORDER BY started_at LIMIT 1 OFFSET (SELECT COUNT(*) / 2 FROM {rl_runs})"
            )
        )
        one = UUID(cursor.fetchone()["run_id"])
    return big, one


def measure(url: str, clients: int, seconds: int, rate: float) -> None:
    rl = bootstrap(Settings(database_url=url), Registry())
    token = rl.tokens.issue("bench", "operator", by="bench").secret
    rl.projector.catch_up()  # the plain baseline reads the token's row as it is
    big, one = picked(rl)
    env = os.environ | {"RUNLEDGER_DATABASE_URL": url, "RUNLEDGER_BUILTIN_MODULES": ""}
    ours, plain = spare_port(), spare_port()
    servers = [
        started([*CLI, "serve", "--no-runner", "--port", str(ours)], env),
        started(
            [sys.executable, "-m", "uvicorn", "scripts.plain_reads:app", "--port", str(plain)], env
        ),
    ]
    base = f"http://127.0.0.1:{ours}"
    collector, answers, everything = StoreCollector(rl), rl.answers, RunFilter()
    now, attempts = rl.clock(), rl.settings.max_revert_attempts
    page = "/admin/events/runs?limit=50"
    cases: list[tuple[str, str, Callable[[], object]]] = [
        ("runs page (50)", f"{base}{page}", lambda: answers.run_page(everything, 50, None)),
        ("one run", f"{base}/admin/events/runs/{one}", lambda: answers.run_detail(one)),
        (
            "its log",
            f"{base}/admin/events/runs/{one}/log",
            lambda: answers.log_page(one, 200, None),
        ),
        ("/metrics", f"{base}/metrics", lambda: list(collector.collect())),
    ]
    try:
        _wait_up(base)
        _wait_up(f"http://127.0.0.1:{plain}", "/docs")
        print(uptime())
        print(
            f"wrk: {clients} connections as fast as answered, {seconds}s; paced: {clients} "
            f"clients asking {rate:g}/s in all, {seconds}s; in-process: one thread"
        )
        print(
            f"{'':22} {'wrk req/s':>10} {'p50 ms':>8} {'p99 ms':>8}   {'paced p50':>9} "
            f"{'p99 ms':>8}   {'in-proc p50':>11} {'p99 ms':>8}"
        )
        plain_page = f"http://127.0.0.1:{plain}{page}"
        load: dict[str, Any] = {"clients": clients, "rate": rate, "seconds": seconds}
        for label, address, direct in [*cases, ("plain FastAPI, runs page", plain_page, None)]:
            served = wrk(address, token, seconds, clients)
            if served.errors:
                raise SystemExit(f"{address} answered errors under load")
            # A scraper asks one scrape at a time (the row below), never many a second.
            steady = None if "/metrics" in address else paced(address, token, **load)
            o50, o99 = in_process(direct, seconds / 2)[1:] if direct else (float("nan"),) * 2
            said = f"{steady.p50_ms:9.2f} {steady.p99_ms:8.2f}" if steady else f"{'-':>9} {'-':>8}"
            print(
                f"{label:24} {served.rate:8,.0f} {served.p50_ms:8.2f} {served.p99_ms:8.2f}   "
                f"{said}   {o50:11.2f} {o99:8.2f}"
            )
        s50, s99 = in_process(lambda: rl.pages.run_counts_scanned(now, attempts), seconds / 2)[1:]
        print(f"{'(the scan /metrics was)':24} {'':41} {s50:11.2f} {s99:8.2f}")
        with httpx.Client(base_url=base, timeout=30) as scraper:
            m50, m99 = first_bytes(scraper, "/metrics", 50)
        o50, o99 = in_process(lambda: list(collector.collect()), seconds / 2)[1:]
        print(
            f"{'/metrics, one scrape':24} {'1st byte':>8} {m50:8.2f} {m99:8.2f}   {'':20}   "
            f"{o50:11.2f} {o99:8.2f}"
        )
        with closing(signed_in(base, token)) as console:
            c50, c99 = first_bytes(console, f"/runs/{big}", 50)
        b50, b99 = in_process(lambda: rl.answers.run_detail(big), seconds / 2)[1:]
        print(
            f"{'console run, 1,000':24} {'1st byte':>8} {c50:8.2f} {c99:8.2f}   {'':20}   "
            f"{b50:11.2f} {b99:8.2f}"
        )
        print(uptime())
    finally:
        for server in servers:
            server.send_signal(signal.SIGTERM)  # our own children, by their pids
            server.wait(timeout=30)
        rl.close()


def started(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--rate", type=float, default=100, help="requests/s of the paced clients, all together"
    )
    parser.add_argument("--small", action="store_true", help="3,000 runs, 30,000 entries")
    parser.add_argument("--fresh", action="store_true", help="build the store again")
    parser.add_argument("--drop", action="store_true", help="drop the store at the end")
    parser.add_argument("--schema", help="measure the store in this schema as it is")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")
    runs, entries = (3_000, 30_000) if args.small else (args.runs, args.entries)
    print(uptime())
    url = f"{PG_ADMIN}?schema={args.schema}" if args.schema else store(runs, entries, args.fresh)
    try:
        measure(url, args.clients, args.seconds, args.rate)
    finally:
        if args.drop:
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {url.rpartition('=')[2]} CASCADE")


if __name__ == "__main__":
    main()

"""Benchmark of the cleanup sweep: throughput beside a plain-SQL implementation of the same
sweep, the candidate query's cost against the given-back history, and the sweep's peak memory
at two sizes of open work.

Run it from the project root, for example::

    .venv/bin/python -m scripts.bench_sweep --store postgres
    .venv/bin/python -m scripts.bench_sweep --store sqlite --parts 1 --profile

It is a script, not a test: it prints figures and changes nothing outside fresh SQLite files
under /tmp or fresh PostgreSQL schemas, all removed at the end (``--keep`` keeps them).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runledger.application.bootstrap import bootstrap
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.views.known import KNOWN_ROWS
from scripts.sweep_history import part_history
from scripts.sweep_meter import Meter, RssSampler, instrument
from scripts.sweep_sql import PlainSweep, Sql
from scripts.sweep_world import (
    ACTION,
    PG_ADMIN,
    Store,
    count_status,
    ledger_runs,
    log_lines,
    make_registry,
    plain_copy,
    plain_count,
    settings_for,
    sweep_until_done,
)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def load() -> float:
    return os.getloadavg()[0]


# --------------------------------------------------------------------------- part 1


@dataclass
class Rep:
    """One fresh store swept twice over the same open work: by runledger, and in plain SQL."""

    setup: float
    live: int
    passes: int
    elapsed: float
    cpu: float
    reverted: int
    plain_elapsed: float
    plain_cpu: float
    plain_reverted: int
    plain_writes: int
    logs: list[tuple[str, str, str]]
    load: float
    meter: Meter
    settings: Settings
    profiler: cProfile.Profile | None
    lanes: int

    @property
    def ours(self) -> float:
        return self.reverted / self.elapsed

    @property
    def plain(self) -> float:
        return self.plain_reverted / self.plain_elapsed

    @property
    def ratio(self) -> float:
        return self.ours / self.plain


def plain_sweep(rl: Runledger, sql: Sql) -> PlainSweep:
    settings = rl.settings
    action = rl.registry.action(ACTION)
    if action is None or action.revert is None:
        raise SystemExit(f"{ACTION} is not registered")
    return PlainSweep(
        sql,
        revert=action.revert,
        worker="bench",
        clock=rl.clock,
        max_attempts=settings.max_revert_attempts,
        run_batch=settings.cleanup_run_batch,
        groups_per_run=settings.cleanup_groups_per_run,
        claim_for=timedelta(
            milliseconds=settings.default_budget_ms, seconds=settings.claim_slack_s
        ),
        backoff=settings.backoff,
        lanes=rl.cleanup.lanes,
    )


def kinds(lines: list[tuple[str, str, str]]) -> dict[str, int]:
    return dict(sorted(Counter(kind for _, kind, _ in lines).items()))


@dataclass
class Clocked:
    """A sweep's passes, each timed: wall and process CPU seconds summed over them."""

    sweep: Callable[[], object]
    wall: float = 0.0
    cpu: float = 0.0
    done: bool = False

    def next_pass(self) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        self.done = not self.sweep()
        self.wall += time.perf_counter() - start
        self.cpu += time.process_time() - cpu


def interleave(first: Clocked, second: Clocked, swap: bool) -> None:
    """Both sweeps to the end, pass by pass in turn, so that a change in the machine's load
    falls on both alike (the one that starts alternates)."""
    gc.collect()
    order = [second, first] if swap else [first, second]
    while not all(c.done for c in order):
        for sweep in order:
            if not sweep.done:
                sweep.next_pass()
        order.reverse()


def throughput_once(args: argparse.Namespace, plain_first: bool) -> Rep:
    """One fresh store: ledger the runs (not timed), copy the open work for the plain sweep,
    then both sweeps, timed pass by pass in turn."""
    store = Store.create(args.store, args.pg_url)
    try:
        settings = settings_for(store, args)
        rl = bootstrap(settings, make_registry())
        with rl:
            t0 = time.perf_counter()
            ledger_runs(rl, args.runs, args.entries, args.per_step, "r")
            setup = time.perf_counter() - t0
            live = count_status(store, "live")
            sql = plain_copy(store)
            sql.writes = 0
            plain = plain_sweep(rl, sql)
            meter = Meter()
            profiler = cProfile.Profile() if args.profile else None
            restore = instrument(rl, meter)
            passes = 0

            def ours() -> bool:
                nonlocal passes
                passes += 1
                if profiler:
                    profiler.enable()
                worked = bool(rl.cleanup.sweep("bench"))
                if profiler:
                    profiler.disable()
                return worked

            ours_clock, plain_clock = Clocked(ours), Clocked(plain.sweep)
            interleave(ours_clock, plain_clock, plain_first)
            restore()
            elapsed, cpu = ours_clock.wall, ours_clock.cpu
            plain_elapsed, plain_cpu = plain_clock.wall, plain_clock.cpu
            mark = "%s" if store.engine == "postgres" else "?"
            with store.raw() as conn:
                logs = log_lines(conn, store.table("rl_run_log"), mark)
            plain_logs = log_lines(sql.conn, sql.table("rl_run_log"), mark)
            rep = Rep(
                setup,
                live,
                passes,
                elapsed,
                cpu,
                count_status(store, "reverted"),
                plain_elapsed,
                plain_cpu,
                plain_count(sql, "reverted"),
                plain.writes,
                logs,
                load(),
                meter,
                settings,
                profiler,
                rl.cleanup.lanes,
            )
            plain.close()
            sql.close()
    finally:
        if not args.keep:
            store.drop()
    if rep.reverted != live or rep.plain_reverted != live or logs != plain_logs:
        raise SystemExit(
            f"not the same work: {live} live entries; reverted {rep.reverted} by ours, "
            f"{rep.plain_reverted} in plain SQL; {len(logs)} and {len(plain_logs)} cleanup log "
            f"lines, {'alike' if logs == plain_logs else 'different'}"
        )
    return rep


def part_throughput(args: argparse.Namespace) -> None:
    groups_per_run = -(-args.entries // args.per_step)
    print(
        f"\n== 1. sweep throughput: {args.runs} runs x {args.entries} entries "
        f"({args.per_step} per step, {groups_per_run} revert calls per run) on {args.store}, "
        f"{args.repeat} repetition(s), each on a fresh store; ours beside the same sweep in "
        "plain SQL (scripts/sweep_sql.py) over a copy of the same open work"
    )
    reps = []
    for i in range(args.repeat):
        r = throughput_once(args, plain_first=i % 2 == 1)
        reps.append(r)
        print(
            f"   rep {i + 1}: OURS {r.ours:7,.0f} entries/s ({r.elapsed:5.2f} s wall, "
            f"{r.cpu:5.2f} s CPU) | PLAIN SQL {r.plain:7,.0f} entries/s ({r.plain_elapsed:4.2f} s"
            f" wall, {r.plain_cpu:4.2f} s CPU) | ratio {r.ratio:4.2f} | load {r.load:.1f}"
        )
    ranked = sorted(reps, key=lambda x: x.ratio)
    r = ranked[len(ranked) // 2]
    meter, settings = r.meter, r.settings
    print(
        f"   settings: cleanup_run_batch={settings.cleanup_run_batch}, "
        f"cleanup_groups_per_run={settings.cleanup_groups_per_run}, "
        f"max_revert_attempts={settings.max_revert_attempts}, cleanup_lanes="
        f"{settings.cleanup_lanes or 'by store'} "
        f"({'given' if args.run_batch or args.groups_per_run or args.lanes else 'the defaults'}); "
        f"both sweeps divide a pass's runs between {r.lanes} lane(s)"
    )
    print(
        f"   setup through the application (not timed): {r.setup:.1f} s, {r.live} live entries; "
        f"each sweep gave back all of them and wrote the same {len(r.logs)} cleanup log lines, "
        f"detail for detail ({', '.join(f'{n} {k}' for k, n in kinds(r.logs).items())})"
    )
    print(
        f"   OURS      {r.ours:8,.0f} entries / s, client CPU {1e6 * r.cpu / r.reverted:4.0f} us "
        f"per entry; {r.passes} passes; {len(meter.write_txns)} write transactions "
        f"({meter.saves} app.save holding {meter.save_events} events = "
        f"{meter.save_events / r.reverted:.2f} per entry, {meter.pages} projector pages)"
    )
    print(
        f"   PLAIN SQL {r.plain:8,.0f} entries / s, client CPU "
        f"{1e6 * r.plain_cpu / r.plain_reverted:4.0f} us per entry; {r.plain_writes} write "
        "transactions (one per module call: the last verdict and the next claim)"
    )
    print(
        f"   ratio ours / plain SQL (throughput, median rep): {r.ratio:.2f}  (reps "
        f"{', '.join(f'{x.ratio:.2f}' for x in ranked)}; {args.store}; load {r.load:.1f})"
    )
    print(
        f"   client CPU per entry: ours {1e6 * r.cpu / r.reverted:.0f} us, plain SQL "
        f"{1e6 * r.plain_cpu / r.plain_reverted:.0f} us (cpu ratio plain / ours "
        f"{(r.plain_cpu / r.plain_reverted) / (r.cpu / r.reverted):.2f}: steadier than the "
        "throughput ratio on a loaded machine, blind to the database server's own work)"
    )
    print(
        "   where our sweep's time went (wrapped calls; wall, then the sweep thread's own CPU,"
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
    if r.lanes > 1:
        print(
            f"     (summed over {r.lanes} lanes working at once, so the shares add past 100 % "
            "and no rest is shown; --lanes 1 shows it)"
        )
    else:
        print(
            f"     {'rest (grouping, domain, verdicts)':42s} "
            f"{r.elapsed - accounted:6.2f} s {100 * (r.elapsed - accounted) / r.elapsed:5.1f} %"
        )
    if r.profiler:
        out = io.StringIO()
        stats = pstats.Stats(r.profiler, stream=out)
        stats.sort_stats("tottime").print_stats(args.profile_top)
        stats.sort_stats("cumulative").print_stats(args.profile_top)
        path = Path(tempfile.gettempdir()) / f"bench_sweep_{args.store}.pstats"
        stats.dump_stats(str(path))
        print(
            f"   cProfile of our sweep (it slows ours ~2x, so the ratio above is not the one to "
            f"quote; {path} holds the full profile):"
        )
        print(out.getvalue())


# --------------------------------------------------------------------------- part 3


@dataclass
class Memory:
    open_entries: int
    swept: int
    seconds: float
    traced_peak: int
    rss_delta: int


def part_memory(args: argparse.Namespace) -> None:
    """The sweep's peak memory over two sizes of open work on one store: a sweep holds a
    bounded page per run of its batch and each view remembers at most ``KNOWN_ROWS`` rows, so
    past that many open entries (the default sizes are) the peak should not follow the work."""
    store = Store.create(args.store, args.pg_url)
    found: list[Memory] = []
    try:
        rl = bootstrap(settings_for(store, args), make_registry())
        with rl:
            ledger_runs(rl, 2, args.entries, args.per_step, "warm")
            sweep_until_done(rl)
            for runs in args.memory_runs:
                ledger_runs(rl, runs, args.entries, args.per_step, f"mem{runs}")
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
                found.append(Memory(open_entries, swept, seconds, traced, rss.peak - rss.base))
    finally:
        if not args.keep:
            store.drop()
    print(
        f"\n== 3. sweep peak memory at two sizes of open work, one store, on {args.store}; "
        f"each view remembers up to {KNOWN_ROWS:,} rows (below that, the peak grows with them)"
    )
    for m in found:
        print(
            f"   {m.open_entries:>7,} open entries: swept {m.swept} in {m.seconds:.2f} s (under "
            f"tracemalloc); tracemalloc peak {m.traced_peak / 1e6:6.2f} MB, RSS peak delta "
            f"{m.rss_delta / 1e6:6.2f} MB"
        )
    small, large = found[0], found[-1]
    print(
        f"   ratio {large.open_entries:,} / {small.open_entries:,} open entries: tracemalloc "
        f"peak {large.traced_peak / max(small.traced_peak, 1):.2f} (flat is 1)"
    )


# --------------------------------------------------------------------------- main


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--runs", type=int, default=200, help="part 1: runs to give back")
    parser.add_argument("--entries", type=int, default=50, help="entries per run")
    parser.add_argument("--per-step", type=int, default=25, help="entries per step (one call)")
    parser.add_argument(
        "--run-batch", type=int, default=0, help="cleanup_run_batch (0: the Settings default)"
    )
    parser.add_argument(
        "--groups-per-run",
        type=int,
        default=0,
        help="cleanup_groups_per_run (0: the Settings default)",
    )
    parser.add_argument(
        "--lanes", type=int, default=0, help="cleanup_lanes, both sweeps' (0: by store)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="part 1: repetitions")
    parser.add_argument("--small", type=int, default=10_000, help="part 2: smaller history")
    parser.add_argument("--large", type=int, default=300_000, help="part 2: larger history")
    parser.add_argument(
        "--real",
        type=int,
        default=2_500,
        help="part 2: entries of each size given back through real work at least (the last "
        "ones); the rest replays the projection's upserts of a real round",
    )
    parser.add_argument(
        "--replay",
        choices=("fast", "exact"),
        default="fast",
        help="part 2: the bulk replays a real round's upserts with only its candidate queries "
        "among the reads, 4 rounds at a time (fast), or with every read, a round at a time",
    )
    parser.add_argument(
        "--vacuum",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="part 2: time the query again after a VACUUM at the larger size",
    )
    parser.add_argument("--open-runs", type=int, default=5, help="part 2: open runs")
    parser.add_argument("--reps", type=int, default=15, help="part 2: timed repetitions")
    parser.add_argument(
        "--memory-runs",
        type=sizes,
        default=[100, 200],
        help="part 3: open runs (of --entries each) at the two sizes, comma separated",
    )
    parser.add_argument("--parts", default="123", help="which parts to run, e.g. 1 or 13")
    parser.add_argument("--profile", action="store_true", help="cProfile part 1's sweep")
    parser.add_argument("--profile-top", type=int, default=30)
    parser.add_argument("--pg-url", default=PG_ADMIN, help="PostgreSQL database (admin) URL")
    parser.add_argument("--keep", action="store_true", help="keep the stores for inspection")
    args = parser.parse_args(argv)
    print(
        f"runledger sweep benchmark: {args.store}, python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    print(f"uptime: {uptime()}")
    if "1" in args.parts:
        part_throughput(args)
    if "2" in args.parts:
        part_history(args)
    if "3" in args.parts:
        part_memory(args)
    print(f"\nuptime: {uptime()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

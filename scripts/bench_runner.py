"""Benchmark of the runner: how long a run waits from its end to its cleanup being complete
(a burst, and a steady stream), and how throughput scales with runner processes.

Run it from the project root, with a PostgreSQL server, for example::

    .venv/bin/python -m scripts.bench_runner                      # all parts, PostgreSQL
    .venv/bin/python -m scripts.bench_runner --store sqlite --parts burst
    EVENT_CLEANUP_RUN_BATCH=50 .venv/bin/python -m scripts.bench_runner --parts burst steady

The runners are ``scripts/drills/runner_proc.py`` processes with an instant module; they read
their settings from the environment (EVENT_* batch variables included), as a runner does.

- burst: one runner; runs whose one phase advances by hand are started and dispatched, then
  this script advances them all at once (each completes); seconds from the last one ending
  (its ``Run.Completed``) to the last entry given back (``Resource.Reverted``).
- steady: the same, advancing ``--rate`` runs a second for ``--seconds``; per run, seconds from
  its end to its last entry given back (terminal -> ``complete``), beside one tick interval.
- runners: 1, 2, 4 runner processes do everything (dispatch, complete, give back) for
  ``--runs`` runs on one PostgreSQL store; entries given back a second, and where the time
  went: each runner's legs (its tick lines), the runners' sessions (``pg_stat_activity``
  sampled), and CPU of the runners, of their PostgreSQL backends and of the machine;
  ``--rounds K`` runs every count K times in turn and prints the ratios' median.

Times are the ones the runner stamped on its events. It is a script, not a test: it prints
figures and drops its schemas and files.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg.sql import SQL, Identifier

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import Conflict
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import ENV_NAMES, Settings
from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.domain.step import Step
from scripts.drills.runner_proc import ACTION, MODULE, PROG
from scripts.runner_meter import Sessions, TickSums, cpu_seconds, machine_busy, tick_sums

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
BATCH_VARIABLES = (
    "cleanup_run_batch",
    "cleanup_groups_per_run",
    "cleanup_lanes",
    "advance_run_batch",
    "steps_per_run_tick",
    "steps_per_tick",
)


@dataclass
class Figures:
    runners: int
    runs: int
    entries: int
    wall_s: float
    runs_done_s: float
    entries_done_s: float
    lag_median_s: float
    lag_p90_s: float
    lag_worst_s: float
    errors_logged: int
    ticks: dict[str, TickSums]
    sessions: dict[str, float]
    runner_cpu_s: float
    server_cpu_s: float
    machine_busy: float

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.runs_done_s

    @property
    def entries_per_s(self) -> float:
        return self.entries / self.entries_done_s


class Store:
    """A fresh store: a PostgreSQL schema or a SQLite file, dropped by ``close``."""

    def __init__(self, engine: str, admin: str, folder: Path) -> None:
        self.engine = engine
        self.admin = admin
        if engine == "postgres":
            self.schema = f"rl_benchrun_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(SQL("CREATE SCHEMA {}").format(Identifier(self.schema)))
            self.url = f"{admin}?schema={self.schema}"
        else:
            self.file = folder / "bench.sqlite3"
            self.url = f"sqlite:///{self.file}"
        init_store(Settings(database_url=self.url))
        self._conn: psycopg.Connection[Any] | None = None
        self._db: sqlite3.Connection | None = None
        self._after = 0
        self._counted: dict[str, int] = {}

    def counts(self, rl: Runledger) -> dict[str, int]:
        """Runs completed, entries recorded and given back, straight from the event store.

        Polled every 20 ms while the runner works, so each call reads only the events after
        the last it read, on one connection kept open: a new connection and a count of the
        whole table at every poll took a share of the two cores from the runner it measures."""
        recorder: Any = rl.app.recorder
        topics = {
            "completed": topic(Run.Completed),
            "recorded": topic(Resource.Recorded),
            "reverted": topic(Resource.Reverted),
            "steps": topic(Step.Succeeded),
        }
        names = list(topics.values())
        if self.engine == "postgres":
            table = Identifier(recorder.datastore.schema or "public", recorder.events_table_name)
            statement = SQL(
                "SELECT topic, COUNT(*), MAX(notification_id) FROM {} "
                "WHERE notification_id > %s AND topic IN (%s, %s, %s, %s) GROUP BY topic"
            ).format(table)
            if self._conn is None:
                self._conn = psycopg.connect(self.admin, autocommit=True)
            rows = self._conn.execute(statement, [self._after, *names]).fetchall()
        else:
            if self._db is None:
                self._db = sqlite3.connect(f"file:{self.file}?mode=ro", uri=True)
            rows = self._db.execute(
                f"SELECT topic, COUNT(*), MAX(rowid) FROM {recorder.events_table_name} "
                "WHERE rowid > ? AND topic IN (?, ?, ?, ?) GROUP BY topic",
                [self._after, *names],
            ).fetchall()
        # Positions commit in order on both stores (the library locks the table to insert on
        # PostgreSQL), so none below the last one read can still appear.
        for t, n, last in rows:
            self._counted[str(t)] = self._counted.get(str(t), 0) + int(n)
            self._after = max(self._after, int(last))
        return {name: self._counted.get(t, 0) for name, t in topics.items()}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._db is not None:
            self._db.close()
        if self.engine == "postgres":
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(
                    SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(Identifier(self.schema))
                )


def spec(number: int, steps: int, resources: int, advance: str) -> dict[str, Any]:
    return {
        "name": f"bench {number}",
        "phases": [
            {
                "id": "p1",
                "advance": advance,
                "after_s": 0,
                "steps": [
                    {"id": f"s{i}", "action": ACTION, "params": {"count": resources}}
                    for i in range(steps)
                ],
            }
        ],
    }


def observer(url: str) -> Runledger:
    registry = Registry()
    registry.module(MODULE).action(ACTION, perform=lambda **_: None, revert=lambda **_: None)
    return bootstrap(Settings(database_url=url), registry)


def topic(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def events(rl: Runledger) -> list[Any]:
    found: list[Any] = []
    start = 0
    while True:
        notes = rl.app.recorder.select_notifications(
            start=start, limit=2000, inclusive_of_start=False
        )
        found += [rl.app.mapper.to_domain_event(n) for n in notes]
        if len(notes) < 2000:
            return found
        start = notes[-1].id


def ends_and_backs(everything: list[Any]) -> tuple[dict[UUID, datetime], dict[UUID, datetime]]:
    """Per run: when it completed, and when the last of its entries was given back."""
    run_of: dict[UUID, UUID] = {}
    completed: dict[UUID, datetime] = {}
    given_back: dict[UUID, datetime] = {}
    for event in everything:
        if isinstance(event, Resource.Recorded):
            run_of[event.originator_id] = event.run_id
        elif isinstance(event, Run.Completed):
            completed[event.originator_id] = event.at
        elif isinstance(event, Resource.Reverted):
            run = run_of[event.originator_id]
            given_back[run] = max(given_back.get(run, event.at), event.at)
    return completed, given_back


def lags(everything: list[Any]) -> list[float]:
    """Per run: seconds from its Completed event to the last Reverted event of its entries."""
    completed, given_back = ends_and_backs(everything)
    return sorted((given_back[run] - at).total_seconds() for run, at in completed.items())


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def profiled(folder: Path, n: int) -> list[str]:
    """Runner 0 under cProfile when RUNLEDGER_BENCH_PROFILE names a folder for its profile."""
    where = os.environ.get("RUNLEDGER_BENCH_PROFILE")
    if not where or n != 0:
        return []
    return ["-m", "cProfile", "-o", str(Path(where) / f"{folder.name}-r0.prof")]


class Runners:
    """Runner processes released together; each ended by its own pid. They read their settings
    from this environment, as a runner does (scripts/drills/runner_proc.py: Settings.from_env())."""

    def __init__(self, url: str, count: int, folder: Path, interval: float, app: str) -> None:
        self.folder = folder
        self.go = folder / "go"
        self.ticks = folder / "ticks.jsonl"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.started_cpu_s = 0.0
        for n in range(count):
            env = {
                "POSTGRES_POOL_SIZE": "2",
                "POSTGRES_MAX_OVERFLOW": "4",
                **os.environ,
                "PGAPPNAME": f"{app}{n}",
            }
            with (folder / f"r{n}.err").open("wb") as err:
                self.procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            *profiled(folder, n),
                            "-m",
                            PROG,
                            "--url",
                            url,
                            "--worker",
                            f"r{n}",
                            "--calls",
                            str(folder / "calls.jsonl"),
                            "--interval",
                            str(interval),
                            "--ready",
                            str(folder / f"ready-{n}"),
                            "--go",
                            str(self.go),
                            "--ticks",
                            str(self.ticks),
                        ],
                        cwd=ROOT,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                )

    def release(self) -> float:
        while not all((self.folder / f"ready-{n}").exists() for n in range(len(self.procs))):
            self.check()
            time.sleep(0.01)
        self.started_cpu_s = self._cpu_s()
        self.go.touch()
        return time.time()

    def check(self) -> None:
        if any(p.poll() is not None for p in self.procs):
            raise RuntimeError(f"a runner died: {self.stderr()}")

    def cpu_s(self) -> float:
        """The runners' CPU since their release: the work, without each process's start-up
        (imports, bootstrap), which four processes pay four times for the same work."""
        return self._cpu_s() - self.started_cpu_s

    def _cpu_s(self) -> float:
        return sum(cpu_seconds(p.pid) or 0.0 for p in self.procs)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def stderr(self) -> str:
        return "\n".join(
            (self.folder / f"r{n}.err").read_text()[-2000:] for n in range(len(self.procs))
        )

    def errors_logged(self) -> int:
        """Tracebacks the runners logged: conflicts between runners, mostly."""
        return sum(
            (self.folder / f"r{n}.err").read_text().count("Traceback")
            for n in range(len(self.procs))
        )


def wait_for(store: Store, rl: Runledger, procs: Runners, what: str, at_least: int) -> None:
    deadline = time.monotonic() + 600
    while (seen := store.counts(rl))[what] < at_least:
        if time.monotonic() > deadline:
            raise RuntimeError(f"not done after 600 s: {seen}: {procs.stderr()}")
        procs.check()
        time.sleep(0.02)


@dataclass
class Latency:
    runs: int
    ended_over_s: float
    burst_s: float  # last run ended -> last entry given back
    lags: list[float]
    ticks: TickSums
    settings: Settings


def latency(
    engine: str, admin: str, runs: int, steps: int, resources: int, interval: float, rate: float
) -> Latency:
    """One runner; ``runs`` manual-advance runs dispatched, then advanced here at ``rate`` runs
    a second (0: as fast as this process can, the burst)."""
    with tempfile.TemporaryDirectory(prefix="rl_bench_") as tmp:
        store = Store(engine, admin, Path(tmp))
        try:
            with observer(store.url) as rl:
                ids = [rl.runs.start(spec(n, steps, resources, "manual")) for n in range(runs)]
                entries = runs * steps * resources
                procs = Runners(store.url, 1, Path(tmp), interval, f"rlbench_lat_{os.getpid()}_")
                try:
                    procs.release()
                    wait_for(store, rl, procs, "recorded", entries)
                    wait_for(store, rl, procs, "steps", runs * steps)
                    time.sleep(interval + 0.5)  # the last dispatch's tick is over
                    began = time.monotonic()
                    for n, run_id in enumerate(ids):
                        if rate > 0:
                            time.sleep(max(0.0, began + n / rate - time.monotonic()))
                        advance(rl, run_id)
                    ended_over = time.monotonic() - began
                    wait_for(store, rl, procs, "reverted", entries)
                finally:
                    procs.stop()
                everything = events(rl)
                ticks = tick_sums(procs.ticks).get("r0", TickSums())
            completed, given_back = ends_and_backs(everything)
            burst = (max(given_back.values()) - max(completed.values())).total_seconds()
            return Latency(runs, ended_over, burst, lags(everything), ticks, Settings.from_env())
        finally:
            store.close()


def advance(rl: Runledger, run_id: UUID) -> None:
    """Advance one run, again while this process's view has not yet seen its steps done."""
    for _ in range(200):
        try:
            rl.runs.advance(run_id, by="bench")
            return
        except Conflict:
            time.sleep(0.01)
    rl.runs.advance(run_id, by="bench")


def scaling(admin: str, runners: int, runs: int, steps: int, resources: int) -> Figures:
    """``runners`` processes do everything for ``runs`` auto runs on a fresh schema."""
    with tempfile.TemporaryDirectory(prefix="rl_bench_") as tmp:
        store = Store("postgres", admin, Path(tmp))
        try:
            # The runs are started by a runledger closed before the runners start: on
            # PostgreSQL the first process to read the views becomes the store's projector,
            # and that must be a runner, whose CPU is measured, not this script.
            with observer(store.url) as starter:
                for number in range(runs):
                    starter.runs.start(spec(number, steps, resources, "auto"))
            with observer(store.url) as rl:  # reads the events table only, never the views
                entries = runs * steps * resources
                app = f"rlbench_{store.schema}_"
                procs = Runners(store.url, runners, Path(tmp), 0.02, app)
                sessions = Sessions(admin, app)
                try:
                    go = procs.release()
                    sessions.start()
                    busy0, total0 = machine_busy()
                    wait_for(store, rl, procs, "completed", runs)
                    wait_for(store, rl, procs, "reverted", entries)
                    wall = time.time() - go
                    busy1, total1 = machine_busy()
                    runner_cpu = procs.cpu_s()
                finally:
                    sessions.stop()
                    procs.stop()
                everything = events(rl)
                errors = procs.errors_logged()
                ticks = tick_sums(procs.ticks)
        finally:
            store.close()
    done = [e.at.timestamp() for e in everything if isinstance(e, Run.Completed)]
    backs = [e.at.timestamp() for e in everything if isinstance(e, Resource.Reverted)]
    waits = lags(everything)
    return Figures(
        runners=runners,
        runs=runs,
        entries=entries,
        wall_s=wall,
        runs_done_s=max(done) - go,
        entries_done_s=max(backs) - go,
        lag_median_s=statistics.median(waits),
        lag_p90_s=pct(waits, 0.9),
        lag_worst_s=waits[-1],
        errors_logged=errors,
        ticks=ticks,
        sessions=sessions.shares(),
        runner_cpu_s=runner_cpu,
        server_cpu_s=sessions.server_cpu_s(),
        machine_busy=(busy1 - busy0) / max(total1 - total0, 1.0),
    )


def table(rows: list[Figures]) -> str:
    head = (
        f"{'runners':>7} {'runs/s':>8} {'entries/s':>10} {'all runs done':>14} "
        f"{'all given back':>15} {'lag median':>11} {'lag p90':>8} {'lag worst':>10} "
        f"{'tracebacks':>10}"
    )
    lines = [head, "-" * len(head)]
    for f in rows:
        lines.append(
            f"{f.runners:>7} {f.runs_per_s:>8.1f} {f.entries_per_s:>10.1f} "
            f"{f.runs_done_s:>13.2f}s {f.entries_done_s:>14.2f}s {f.lag_median_s:>10.2f}s "
            f"{f.lag_p90_s:>7.2f}s {f.lag_worst_s:>9.2f}s {f.errors_logged:>10}"
        )
    return "\n".join(lines)


def where(f: Figures) -> str:
    """Where the time of one scaling run went."""
    lines = [
        f"{f.runners} runner(s), {f.wall_s:.2f}s wall: CPU runners {f.runner_cpu_s:.2f}s, their "
        f"PostgreSQL backends {f.server_cpu_s:.2f}s, machine busy {f.machine_busy:.0%} of "
        f"{os.cpu_count()} CPUs"
    ]
    for worker, t in sorted(f.ticks.items()):
        lines.append(
            f"  {worker}: {t.ticks} ticks, advance {t.advance_s:.2f}s, cleanup {t.cleanup_s:.2f}s"
            f" (worst tick {t.worst_tick_s:.2f}s); dispatched {t.dispatched}, completed "
            f"{t.completed}, gave back {t.given_back}"
        )
    shares = ", ".join(f"{k} {v:.2f}" for k, v in f.sessions.items())
    lines.append(f"  runner sessions (mean count per sample): {shares}")
    return "\n".join(lines)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def show_latency(store: str, name: str, lat: Latency, interval: float) -> None:
    t = lat.ticks
    mean_tick = (t.advance_s + t.cleanup_s) / max(t.ticks, 1)
    period = interval + mean_tick
    print(
        f"{name} on {store}: {lat.runs} runs ended over {lat.ended_over_s:.2f}s "
        f"({lat.runs / lat.ended_over_s:.0f} runs/s); last ended -> all complete "
        f"{lat.burst_s:.2f}s; terminal -> complete p50 {pct(lat.lags, 0.5):.3f}s "
        f"p99 {pct(lat.lags, 0.99):.3f}s worst {lat.lags[-1]:.3f}s"
    )
    print(
        f"  one tick: interval {interval:g}s + mean tick {mean_tick * 1000:.0f} ms "
        f"(worst {t.worst_tick_s * 1000:.0f} ms) = {period:.3f}s; {t.ticks} ticks, advance "
        f"{t.advance_s:.2f}s, cleanup {t.cleanup_s:.2f}s, gave back {t.given_back}"
    )
    print(
        f"  ratio p99 / (one tick + 100 ms) = {pct(lat.lags, 0.99) / (period + 0.1):.2f}; "
        f"ratio burst / 1 s = {lat.burst_s:.2f}"
    )


def ratios(rounds: list[list[Figures]]) -> str:
    """Each count's entries/s and runners' CPU against the first count's, round by round (the
    counts of a round run one after the other), and their median: on this machine the same
    code's CPU ratio moves by 0.3 from one minute to the next (scripts/MEASUREMENTS.md)."""
    lines = []
    for i, count in enumerate(rounds[0][1:], start=1):
        speed = [r[i].entries_per_s / r[0].entries_per_s for r in rounds]
        cpu = [r[i].runner_cpu_s / r[0].runner_cpu_s for r in rounds]
        each = f" (rounds: {_listed(speed)}; {_listed(cpu)})" if len(rounds) > 1 else ""
        lines.append(
            f"ratio entries/s {count.runners} runners / {rounds[0][0].runners}: "
            f"{statistics.median(speed):.2f}; ratio runners' CPU for the same work "
            f"{count.runners} / {rounds[0][0].runners}: {statistics.median(cpu):.2f}{each}"
        )
    return "\n".join(lines)


def _listed(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admin", default=PG_ADMIN, help="a PostgreSQL URL to make schemas in")
    parser.add_argument("--store", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=["burst", "steady", "runners"],
        default=["burst", "steady", "runners"],
    )
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--resources", type=int, default=5, help="refs per step")
    parser.add_argument("--burst-runs", type=int, default=300)
    parser.add_argument("--rate", type=float, default=50.0, help="steady: runs ending a second")
    parser.add_argument("--seconds", type=float, default=10.0, help="steady: for how long")
    parser.add_argument("--interval", type=float, default=1.0, help="burst, steady: tick sleep")
    parser.add_argument("--runs", type=int, default=150, help="runners: runs to do")
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="runners: rounds of every count in turn; the ratios are each round's and their median",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds: must be at least 1")
    env = Settings.from_env()
    print(uptime())
    print(
        f"{args.steps} steps x {args.resources} resources a run; instant module; "
        f"{os.cpu_count()} CPUs; runner settings from the environment: "
        + ", ".join(f"{ENV_NAMES[k]}={getattr(env, k)}" for k in BATCH_VARIABLES),
        flush=True,
    )
    if "burst" in args.parts:
        lat = latency(
            args.store, args.admin, args.burst_runs, args.steps, args.resources, args.interval, 0
        )
        show_latency(args.store, "burst", lat, args.interval)
    if "steady" in args.parts:
        runs = int(args.rate * args.seconds)
        lat = latency(
            args.store, args.admin, runs, args.steps, args.resources, args.interval, args.rate
        )
        show_latency(args.store, "steady", lat, args.interval)
    if "runners" in args.parts:
        rounds: list[list[Figures]] = []
        for n in range(args.rounds):
            rows = []
            for count in args.runners:
                rows.append(scaling(args.admin, count, args.runs, args.steps, args.resources))
                print(
                    f"  round {n + 1}: {count} runner(s) done in {rows[-1].wall_s:.1f}s",
                    flush=True,
                )
            rounds.append(rows)
        print()
        print(table(rounds[-1]) + ("\n(the last round)" if len(rounds) > 1 else ""))
        for f in rounds[-1]:
            print(where(f))
        print(ratios(rounds))
        print(
            "\nruns/s = runs / (last Run.Completed - release); entries/s = entries / (last "
            "Resource.Reverted - release);\nlag = per run, last Reverted of its entries - its "
            "Completed (times as the runners stamped them)."
        )
    print(uptime())
    return 0


if __name__ == "__main__":
    sys.exit(main())

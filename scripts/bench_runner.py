"""Benchmark of the runner: how throughput scales with runner processes, and how long a run
waits between its terminal status and its cleanup being complete.

Run it from the project root, with a PostgreSQL server, for example::

    .venv/bin/python scripts/bench_runner.py --runs 300 --steps 2 --resources 5 --runners 1 2 4

For each runner count it makes a fresh schema, starts every run, then starts that many runner
processes (``tests/runner_proc.py`` with an instant module) and releases them at one moment. It
waits until every run is completed and every entry given back, stops the runners, and reads the
figures from the event store: ``Run.Completed`` and ``Resource.Reverted`` events carry the time
the runner decided them. It is a script, not a test: it prints figures and drops its schemas.
"""

from __future__ import annotations

import argparse
import os
import signal
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

from runledger.application.bootstrap import Runledger, bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from runledger.domain.run import Run

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "tests" / "runner_proc.py"
PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ACTION = "crashworld.spawn"  # what tests/runner_proc.py registers
MODULE = "crashworld"


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

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.runs_done_s

    @property
    def entries_per_s(self) -> float:
        return self.entries / self.entries_done_s


def new_schema(admin: str) -> str:
    schema = f"rl_benchrun_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(SQL("CREATE SCHEMA {}").format(Identifier(schema)))
    return schema


def drop_schema(admin: str, schema: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(Identifier(schema)))


def spec(number: int, steps: int, resources: int) -> dict[str, Any]:
    return {
        "name": f"bench {number}",
        "phases": [
            {
                "id": "p1",
                "advance": "auto",
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


def counts(rl: Runledger) -> dict[str, int]:
    """How many runs completed and entries were given back, straight from the event store."""
    recorder: Any = rl.app.recorder
    table = Identifier(recorder.datastore.schema or "public", recorder.events_table_name)
    topics = {"completed": topic(Run.Completed), "reverted": topic(Resource.Reverted)}
    statement = SQL(
        "SELECT topic, COUNT(*) AS n FROM {} WHERE topic IN (%s, %s) GROUP BY topic"
    ).format(table)
    with recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute(statement, list(topics.values()))
        found = {row["topic"]: int(row["n"]) for row in cursor.fetchall()}
    return {name: found.get(t, 0) for name, t in topics.items()}


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


def lags(everything: list[Any]) -> list[float]:
    """Per run: seconds from its Completed event to the last Reverted event of its entries."""
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
    return [(given_back[run] - at).total_seconds() for run, at in completed.items()]


class Runners:
    """Runner processes released together; each ended by its own pid."""

    def __init__(self, url: str, count: int, folder: Path) -> None:
        self.folder = folder
        self.go = folder / "go"
        env = {**os.environ, "POSTGRES_POOL_SIZE": "2", "POSTGRES_MAX_OVERFLOW": "4"}
        self.procs: list[subprocess.Popen[bytes]] = []
        for n in range(count):
            with (folder / f"r{n}.err").open("wb") as err:
                self.procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            str(RUNNER),
                            "--url",
                            url,
                            "--worker",
                            f"r{n}",
                            "--calls",
                            str(folder / "calls.jsonl"),
                            "--interval",
                            "0.02",
                            "--ready",
                            str(folder / f"ready-{n}"),
                            "--go",
                            str(self.go),
                        ],
                        cwd=ROOT,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                )

    def release(self) -> float:
        while not all((self.folder / f"ready-{n}").exists() for n in range(len(self.procs))):
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a runner died: {self.stderr()}")
            time.sleep(0.01)
        self.go.touch()
        return time.time()

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


def measure(admin: str, runners: int, runs: int, steps: int, resources: int) -> Figures:
    schema = new_schema(admin)
    url = f"{admin}?schema={schema}"
    try:
        init_store(Settings(database_url=url))
        with observer(url) as rl, tempfile.TemporaryDirectory(prefix="rl_bench_") as tmp:
            for number in range(runs):
                rl.runs.start(spec(number, steps, resources))
            entries = runs * steps * resources
            procs = Runners(url, runners, Path(tmp))
            try:
                go = procs.release()
                deadline = time.monotonic() + 600
                while True:
                    seen = counts(rl)
                    if seen["completed"] >= runs and seen["reverted"] >= entries:
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"not done after 600 s: {seen}: {procs.stderr()}")
                    if any(p.poll() is not None for p in procs.procs):
                        raise RuntimeError(f"a runner died: {procs.stderr()}")
                    time.sleep(0.05)
                wall = time.time() - go
            finally:
                procs.stop()
            everything = events(rl)
            errors = procs.errors_logged()
        done = [e.at.timestamp() for e in everything if isinstance(e, Run.Completed)]
        backs = [e.at.timestamp() for e in everything if isinstance(e, Resource.Reverted)]
        waits = sorted(lags(everything))
        return Figures(
            runners=runners,
            runs=runs,
            entries=entries,
            wall_s=wall,
            runs_done_s=max(done) - go,
            entries_done_s=max(backs) - go,
            lag_median_s=statistics.median(waits),
            lag_p90_s=waits[int(0.9 * (len(waits) - 1))],
            lag_worst_s=waits[-1],
            errors_logged=errors,
        )
    finally:
        drop_schema(admin, schema)


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--admin", default=PG_ADMIN, help="a PostgreSQL URL to make schemas in")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--resources", type=int, default=5, help="refs per step")
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    print(
        f"{args.runs} runs x {args.steps} steps x {args.resources} resources = "
        f"{args.runs * args.steps * args.resources} entries to give back; instant module; "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    rows = []
    for count in args.runners:
        rows.append(measure(args.admin, count, args.runs, args.steps, args.resources))
        print(f"  {count} runner(s): done in {rows[-1].wall_s:.1f}s", flush=True)
    print()
    print(table(rows))
    print(
        "\nruns/s = runs / (last Run.Completed - release); entries/s = entries / (last "
        "Resource.Reverted - release);\nlag = per run, last Reverted of its entries - its "
        "Completed (times as the runners stamped them)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

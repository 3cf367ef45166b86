"""Chaos drill: runner processes killed every few seconds while a module's shard goes down now
and then, and afterwards a check that the world equals the ledger.

Run it from the project root, with a PostgreSQL server, for example::

    .venv/bin/python -m scripts.chaos_drill --runs 150 --runners 3 --minutes 3 --kill-every 4

It makes a schema of its own (dropped at the end), starts the runs (random specs of 1-3 steps of
1-3 refs, in one phase or two) over the first two thirds of the drill, and keeps ``--runners``
processes of ``scripts/drills/runner_proc.py`` working with random faults and outages: windows in
which every call of the module answers a retryable "shard down", each shorter than the back-off
the runners are given (``EVENT_RETRY_DELAYS_S``, ``EVENT_RETRY_JITTER`` in their environment).
Every few seconds one runner is SIGKILLed by its pid and started again at once under a new
worker name (``r2``, then ``r2.2``), so every call and every claim names the process that made
it. Then the survivors work until every run has settled, and are stopped with SIGTERM.

The check (``scripts/drills/world_model.py``) holds the module's calls file, the world's own
history, against the event store. It exits 1 when they disagree or a goal is missed, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from scripts.drills.crash_walks import QUICK, Runners, histories, random_specs, run_rows, settled
from scripts.drills.runner_proc import ACTION, MODULE, append_line, outage_text, read_calls
from scripts.drills.world_model import Audit, audit
from scripts.pg import PG_ADMIN, drop_pg_url, new_pg_url

Window = tuple[float, float]  # seconds after the epoch, length in seconds
START_SPREAD = 2 / 3  # runs keep arriving while runners die, and the last third winds down
FAULTS = (
    "--perform-fail",
    "0.2",
    "--perform-ms",
    "200",
    "--revert-fail",
    "0.15",
    "--revert-terminal",
    "0.02",
    "--revert-partial",
    "0.08",
    "--revert-ms",
    "150",
)


@dataclass
class Drill:
    """The runner processes of one drill, one slot each, and what was done to them."""

    runners: Runners
    knobs: tuple[str, ...]
    rng: random.Random
    live: dict[str, str] = field(default_factory=dict)  # slot -> worker name
    generations: Counter[str] = field(default_factory=Counter)
    killed: set[str] = field(default_factory=set)
    died: list[str] = field(default_factory=list)

    def start(self, slot: str) -> None:
        self.generations[slot] += 1
        n = self.generations[slot]
        self.live[slot] = slot if n == 1 else f"{slot}.{n}"
        self.runners.start(self.live[slot], *self.knobs)

    def kill_one(self) -> None:
        slot = self.rng.choice(sorted(self.live))
        self.runners.kill(self.live[slot])
        self.killed.add(self.live[slot])
        self.start(slot)

    def restart_the_dead(self) -> None:
        """A runner that dies on its own is a finding: noted with its stderr, then replaced."""
        for slot, worker in list(self.live.items()):
            if self.runners.procs[worker].poll() is not None:
                self.died.append(f"{worker} died on its own: {self.runners.stderr(worker)}")
                self.start(slot)

    def ticked(self, worker: str) -> bool:
        return self.runners.beats(worker) > 0

    def stop(self) -> None:
        """SIGTERM each, once it has ticked: one still booting has no handler for it yet."""
        for worker in self.live.values():
            try:
                self.runners.wait_until(partial(self.ticked, worker), f"{worker} to tick")
                self.runners.stop(worker)
            except AssertionError as error:
                self.died.append(str(error))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default=PG_ADMIN, help="PostgreSQL to make the schema in")
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--runners", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=3.0, help="how long the kills go on")
    parser.add_argument("--kill-every", type=float, default=4.0, help="seconds, on average")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--retry-delays", default="1,3,8", help="EVENT_RETRY_DELAYS_S")
    parser.add_argument("--retry-jitter", type=float, default=0.2, help="EVENT_RETRY_JITTER")
    parser.add_argument("--outage-every", type=float, default=20.0, help="one in so many s")
    parser.add_argument("--outage-s", type=float, default=2.5, help="the longest outage")
    parser.add_argument("--settle-timeout", type=float, default=120.0)
    parser.add_argument(
        "--plant",
        action="store_true",
        help="add a made-up repeat and a made-up leak to the calls file, to see the check fail",
    )
    return parser.parse_args(argv)


def shortest_backoff(delays: str, jitter: float, max_attempts: int) -> float:
    """The least time automatic attempts can span: every delay between them, less its jitter."""
    seconds = [float(d) for d in delays.split(",")]
    gaps = [seconds[min(n, len(seconds) - 1)] for n in range(max_attempts - 1)]
    return sum(gaps) * (1 - jitter)


def outages(
    rng: random.Random, span_s: float, every_s: float, longest_s: float, apart_s: float
) -> list[Window]:
    """One window at a random time in every ``every_s`` seconds, of 60-100 % of the longest,
    each ending at least ``apart_s`` before the next begins: two outages closer than one
    entry's whole schedule of attempts are one longer outage to that entry."""
    windows = []
    for n in range(int(span_s // every_s)):
        length = rng.uniform(0.6, 1.0) * longest_s
        windows.append((n * every_s + rng.uniform(0, every_s - length - apart_s), length))
    return windows


def longest_backoff(delays: str, jitter: float, max_attempts: int) -> float:
    """The longest time from an entry's first automatic attempt to its last."""
    seconds = [float(d) for d in delays.split(",")]
    return sum(seconds[min(n, len(seconds) - 1)] for n in range(max_attempts - 1)) * (1 + jitter)


def settings_at(url: str) -> Settings:
    return Settings.model_validate({**Settings.from_env().model_dump(), "database_url": url})


def observer(url: str) -> Runledger:
    """The drill's own view of the store: it starts runs and reads, and never ticks."""

    def never(**_: Any) -> Any:
        raise RuntimeError("the drill never dispatches nor gives back")

    registry = Registry()
    registry.module(MODULE).action(ACTION, perform=never, revert=never)
    return bootstrap(settings_at(url), registry)


def run_drill(rl: Runledger, drill: Drill, args: argparse.Namespace, epoch: float) -> list[UUID]:
    specs = random_specs(args.runs, args.seed)
    runs: list[UUID] = []
    span = args.minutes * 60
    next_kill = epoch + args.kill_every * drill.rng.uniform(0.5, 1.5)
    while (now := time.time()) < epoch + span:
        due = min(len(specs), int(len(specs) * (now - epoch) / (span * START_SPREAD)) + 1)
        runs += [rl.runs.start(s) for s in specs[len(runs) : due]]
        if now >= next_kill:
            drill.kill_one()
            next_kill = now + args.kill_every * drill.rng.uniform(0.5, 1.5)
        drill.restart_the_dead()
        time.sleep(0.1)
    runs += [rl.runs.start(s) for s in specs[len(runs) :]]
    deadline = time.monotonic() + args.settle_timeout
    while not settled(rl, runs) and time.monotonic() < deadline:
        drill.restart_the_dead()
        time.sleep(0.5)
    return runs


def plant(calls: Path, lines: list[dict[str, Any]]) -> None:
    """A second give-back of something already given back, and a spawn nobody ledgered."""
    done = next(c for c in lines if c["call"] == "revert" and c["outcome"] == "ok" and c["refs"])
    append_line(calls, {**done, "t": time.time()})
    made = next(c for c in lines if c["call"] == "perform" and c["outcome"] == "ok")
    append_line(calls, {**made, "refs": [f"{made['key']}/planted"], "t": time.time()})


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{n:.2f}" for n in os.getloadavg())


def report(result: Audit, rl: Runledger, runs: list[UUID], drill: Drill) -> list[str]:
    """Print the figures; answers the goals missed and the disagreements found."""
    rows = run_rows(rl, runs)
    status = Counter(r.status for r in rows)
    cleanup = Counter(r.cleanup_status for r in rows)
    unsettled = len(runs) - cleanup["complete"] - cleanup["incomplete"]
    entries = sum(r.entries for r in rows)
    repeats = [
        f"{result.lines[i]['worker']} called {result.lines[i]['call']} {result.lines[i]['key']} "
        "again"
        for i in sorted(result.repeats)
    ]
    casualties = [f"run {run} left incomplete by outages" for run in result.outage_casualties]
    goals = [
        (
            "repeats per key beyond the in-flight call",
            f"{len(repeats)} calls, {len(result.repeated_keys())} keys",
            repeats,
        ),
        (
            "attempts with no call, beyond one group per kill",
            str(len(result.uncalled)),
            result.uncalled,
        ),
        ("runs needing a person only because of outages", str(len(casualties)), casualties),
    ]
    figures = [
        ("entries", str(entries)),
        (
            "runs: completed / aborted / running",
            f"{status['completed']} / {status['aborted']} / {status['running']}",
        ),
        (
            "cleanup: complete / incomplete / not settled",
            f"{cleanup['complete']} / {cleanup['incomplete']} / {unsettled}",
        ),
        ("kills (restarted under new names)", str(len(drill.killed))),
        (
            "perform calls (outage answers)",
            f"{result.count('perform')} ({result.count('perform', outage=True)})",
        ),
        (
            "revert calls (outage answers)",
            f"{result.count('revert')} ({result.count('revert', outage=True)})",
        ),
        ("attempts / calls, over every entry", f"{result.attempts} / {result.entry_calls}"),
        ("repeats after a call in flight at a kill", str(result.in_flight_repeats)),
        ("repeats after a verdict saved too late", str(result.lost_verdict_repeats)),
        ("given back, left unresolved after a lost verdict", str(result.stale)),
        ("runs aborted by outages alone (no goal)", str(len(result.outage_aborts))),
    ]
    width = 50
    print(f"{'figure':<{width}} {'value':>22}  goal")
    for name, value in figures:
        print(f"{name:<{width}} {value:>22}")
    missed = []
    for name, value, details in goals:
        print(f"{name:<{width}} {value:>22}  0 {'MISSED' if details else 'met'}")
        for detail in details[:3]:
            print(f"  - {detail}")
        if details:
            missed.append(name)
    found = result.problems + drill.died
    if unsettled:
        found.append(f"{unsettled} runs had not settled")
    print(f"{'world equals ledger':<{width}} {'yes' if not found else 'NO':>22}")
    for problem in found[:12]:
        print(f"  - {problem}")
    if len(found) > 12:
        print(f"  - ... and {len(found) - 12} more")
    return missed + found


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    max_attempts = Settings.from_env().max_revert_attempts
    backoff = shortest_backoff(args.retry_delays, args.retry_jitter, max_attempts)
    if args.outage_s >= backoff:
        print(f"an outage of {args.outage_s:g}s is not shorter than the back-off ({backoff:g}s)")
        return 2
    apart = longest_backoff(args.retry_delays, args.retry_jitter, max_attempts)
    if args.outage_every <= args.outage_s + apart:
        print(
            f"--outage-every must be longer than --outage-s and the longest back-off "
            f"({apart:g}s) together"
        )
        return 2
    os.environ |= {
        "EVENT_RETRY_DELAYS_S": args.retry_delays,
        "EVENT_RETRY_JITTER": str(args.retry_jitter),
    }
    rng = random.Random(args.seed)
    windows = outages(rng, args.minutes * 60, args.outage_every, args.outage_s, apart)
    folder = Path(tempfile.mkdtemp(prefix="chaos_drill_"))
    print(
        f"chaos drill: {args.runs} runs, {args.runners} runners, {args.minutes:g} min, a kill "
        f"every ~{args.kill_every:g}s, seed {args.seed}; retry delays {args.retry_delays}s "
        f"(jitter {args.retry_jitter:g}): {max_attempts} attempts span >= {backoff:.1f}s; "
        f"{len(windows)} outages of <= {args.outage_s:g}s\n  calls and runner logs: {folder}\n"
        f"  before: {uptime()}",
        flush=True,
    )
    url = new_pg_url(args.url)
    try:
        init_store(settings_at(url))
        with observer(url) as rl:
            epoch = time.time()
            knobs = (
                *FAULTS,
                "--seed",
                str(args.seed),
                "--epoch",
                f"{epoch:.3f}",
                "--outage",
                outage_text(windows),
                *QUICK,
            )
            drill = Drill(Runners(folder, url), knobs, rng)
            try:
                for n in range(1, args.runners + 1):
                    drill.start(f"r{n}")
                runs = run_drill(rl, drill, args, epoch)
                drill.stop()
            finally:
                drill.runners.end()
            print(f"  after:  {uptime()}\n", flush=True)
            if args.plant:
                plant(drill.runners.calls, read_calls(drill.runners.calls))
            rows = {r.run_id: r for r in run_rows(rl, runs)}
            entries = [e for run in runs for e in rl.queries.entries(run)]
            result = audit(
                read_calls(drill.runners.calls), histories(rl), entries, rows, drill.killed
            )
            failures = report(result, rl, runs, drill)
    finally:
        drop_pg_url(args.url, url)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

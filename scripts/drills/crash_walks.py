"""The crash walks' processes and runs, shared by ``tests/application/test_crash_walks.py`` and
``scripts/chaos_drill.py``: runner processes of ``runner_proc`` (started, killed, frozen and
stopped by their own pids, never by a name), random specs of its module's action, and the reads
that say whether the runs have settled and what core decided, event by event.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

from runledger.application.runledger import Runledger
from runledger.projections.queries import RunRow
from scripts.drills.runner_proc import ACTION, PROG, read_beats
from scripts.drills.world_model import Histories

ROOT = Path(__file__).resolve().parents[2]
# Quick claims: a dead runner's claim is free again a few seconds later, not 40 s later.
QUICK = ("--budget-ms", "1500", "--claim-slack-s", "0.5")

Phase = dict[str, int | dict[str, Any]]  # step id -> how many refs it makes, or its params


class Runners:
    """A walk's runner processes. Each is ended by its own pid, never by a name."""

    def __init__(self, folder: Path, url: str) -> None:
        self.folder = folder
        self.url = url
        self.calls = folder / "calls.jsonl"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, worker: str, *knobs: str) -> None:
        # The walks are about kills, not waiting: short retry delays unless the caller set some.
        env = {
            "EVENT_RETRY_DELAYS_S": "0.2,0.5",
            **os.environ,
            "POSTGRES_POOL_SIZE": "2",
            "POSTGRES_MAX_OVERFLOW": "4",
        }
        command = [
            sys.executable,
            "-m",
            PROG,
            "--url",
            self.url,
            "--worker",
            worker,
            "--calls",
            str(self.calls),
            "--interval",
            "0.02",
            "--heartbeat",
            str(self.heartbeat(worker)),
            *knobs,
        ]
        # Files, not pipes: nobody reads a pipe while the runner works, and a full one blocks it.
        with self._out(worker).open("wb") as out, self._err(worker).open("wb") as err:
            self.procs[worker] = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=err
            )

    def kill(self, worker: str) -> None:
        proc = self.procs[worker]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def signal(self, worker: str, signum: signal.Signals) -> None:
        os.kill(self.procs[worker].pid, signum)

    def stop(self, worker: str, timeout: float = 20.0) -> None:
        """SIGTERM: the runner finishes its tick and exits 0."""
        proc = self.procs[worker]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill(worker)
                raise AssertionError(f"{worker} ignored SIGTERM for {timeout:g}s") from None
        assert proc.returncode == 0, f"{worker} exited {proc.returncode}: {self.stderr(worker)}"

    def end(self) -> None:
        for worker, proc in self.procs.items():
            if proc.poll() is None:
                self.kill(worker)

    def wait_until(self, done: Callable[[], bool], what: str, timeout: float = 60.0) -> float:
        """Poll until ``done``; a runner that dies on its own fails the test with its stderr."""
        started = time.monotonic()
        while not done():
            dead = {
                w: p.returncode
                for w, p in self.procs.items()
                if p.returncode is None and p.poll() is not None
            }
            if dead:
                raise AssertionError(f"runners died {dead}: {self.stderrs()}")
            if time.monotonic() - started > timeout:
                raise AssertionError(f"waited {timeout:g}s for {what}: {self.stderrs()}")
            time.sleep(0.02)
        return time.monotonic() - started

    def stderr(self, worker: str) -> str:
        return self._err(worker).read_text()[-3000:]

    def stderrs(self) -> dict[str, str]:
        return {w: self.stderr(w) for w in self.procs}

    def heartbeat(self, worker: str) -> Path:
        return self.folder / f"{worker}.beats"

    def beats(self, worker: str) -> int:
        """How many ticks the runner has finished."""
        return read_beats(self.heartbeat(worker))

    def _out(self, worker: str) -> Path:
        return self.folder / f"{worker}.out"

    def _err(self, worker: str) -> Path:
        return self.folder / f"{worker}.err"


def spec(name: str, *phases: Phase) -> dict[str, Any]:
    """A spec whose phases map step ids to how many refs each step makes, or to its params."""
    return {
        "name": name,
        "phases": [
            {
                "id": f"p{number}",
                "advance": "auto",
                "after_s": 0,
                "steps": [
                    {
                        "id": step,
                        "action": ACTION,
                        "params": {"count": params} if isinstance(params, int) else params,
                    }
                    for step, params in steps.items()
                ],
            }
            for number, steps in enumerate(phases, start=1)
        ],
    }


def random_specs(count: int, seed: int) -> list[dict[str, Any]]:
    """Runs of 1-3 steps of 1-3 refs, in one phase or two."""
    rng = random.Random(seed)
    specs = []
    for number in range(count):
        steps: Phase = {f"s{i}": rng.randint(1, 3) for i in range(rng.randint(1, 3))}
        cut = rng.randint(1, len(steps) - 1) if len(steps) > 1 and rng.random() < 0.5 else 0
        items = list(steps.items())
        phases = [dict(items[:cut]), dict(items[cut:])] if cut else [steps]
        specs.append(spec(f"parallel {number}", *phases))
    return specs


def run_rows(rl: Runledger, runs: list[UUID]) -> list[RunRow]:
    rl.projector.catch_up()
    return rl.queries.runs(runs, rl.clock(), rl.settings.max_revert_attempts)


def settled(rl: Runledger, runs: list[UUID]) -> bool:
    """Every run has ended and automatic cleanup has nothing left to try."""
    rows = run_rows(rl, runs)
    return len(rows) == len(runs) and all(
        r.status != "running" and r.cleanup_status in ("complete", "incomplete") for r in rows
    )


def histories(rl: Runledger) -> Histories:
    """Every stream in the store, in store order: what core decided, event by event."""
    found: Histories = defaultdict(list)
    start = 0
    while True:
        notes = rl.app.recorder.select_notifications(
            start=start, limit=1000, inclusive_of_start=False
        )
        for note in notes:
            event: Any = rl.app.mapper.to_domain_event(note)
            found[event.originator_id].append(event)
        if len(notes) < 1000:
            return found
        start = notes[-1].id

"""Runledger workers in processes of their own, and the parent's side of starting and ending them.

Run as ``python -m tests.support.procs sweep|claim ...`` from the project root. A worker bootstraps
its
own runledger on an initialised store (it never creates tables), says it is ready, waits for the
parent's go, and then works. Every revert call is appended as one JSON line to a shared file
opened with ``O_APPEND``, so the parent can count calls across processes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from tests.support.by_hand import claim

ROOT = Path(__file__).resolve().parents[2]
ACTION = "world.spawn"
MODULE = "world"


def appending_revert(path: Path, worker: str) -> Callable[..., Any]:
    """A module's revert that says, in one line per call, what it was asked to give back."""

    def revert(resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        line = {"worker": worker, "key": idempotency_key, "refs": [r["ref"] for r in resources]}
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)
        time.sleep(0.002)  # a call that takes a moment widens the window for a race
        return {"ok": True}

    return revert


def read_calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _await_go(ready: Path, go: Path, timeout: float = 60.0) -> None:
    ready.touch()
    deadline = time.monotonic() + timeout
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the parent never said go")
        time.sleep(0.001)


def _open(url: str, registry: Registry) -> Runledger:
    return bootstrap(Settings(database_url=url), registry)


def sweep_until_done(rl: Runledger, worker: str, limit: float = 90.0) -> int:
    """Sweep until no run has anything left this worker may take; answers how many sweeps."""
    deadline = time.monotonic() + limit
    sweeps = 0
    while time.monotonic() < deadline:
        rl.cleanup.sweep(worker)
        sweeps += 1
        settings = rl.settings
        left = rl.queries.candidate_runs(
            rl.clock(), settings.max_revert_attempts, settings.cleanup_run_batch
        )
        if not left:
            return sweeps
    raise TimeoutError(f"{worker} still had candidates after {limit:g}s")


def _sweep(args: argparse.Namespace) -> int:
    registry = Registry()
    registry.module(MODULE).action(ACTION, revert=appending_revert(Path(args.calls), args.worker))
    with _open(args.url, registry) as rl:
        _await_go(Path(args.ready), Path(args.go))
        sweeps = sweep_until_done(rl, args.worker)
    print(json.dumps({"worker": args.worker, "sweeps": sweeps}))
    return 0


def _claim(args: argparse.Namespace) -> int:
    with _open(args.url, Registry()) as rl:
        _await_go(Path(args.ready), Path(args.go))
        expires = rl.clock() + timedelta(seconds=60)
        won = claim(rl, UUID(args.entry), args.worker, expires, 3)
    print(json.dumps({"worker": args.worker, "won": won}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests.support.procs")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("sweep", "claim"):
        command = sub.add_parser(name)
        command.add_argument("--url", required=True)
        command.add_argument("--worker", required=True)
        command.add_argument("--ready", required=True)
        command.add_argument("--go", required=True)
    sub.choices["sweep"].add_argument("--calls", required=True)
    sub.choices["claim"].add_argument("--entry", required=True)
    args = parser.parse_args(argv)
    return _sweep(args) if args.command == "sweep" else _claim(args)


class Workers:
    """Worker processes started together; ended by their own pid, never by name."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.go = folder / "go"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, command: str, worker: str, *args: str) -> None:
        env = {**os.environ, "POSTGRES_POOL_SIZE": "2", "POSTGRES_MAX_OVERFLOW": "4"}
        # Files, not pipes: a chatty worker must not block on a pipe nobody is reading yet.
        with self.out(worker).open("wb") as out, self.err(worker).open("wb") as err:
            self.procs[worker] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.support.procs",
                    command,
                    "--worker",
                    worker,
                    "--ready",
                    str(self.ready(worker)),
                    "--go",
                    str(self.go),
                    *args,
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=err,
            )

    def ready(self, worker: str) -> Path:
        return self.folder / f"ready-{worker}"

    def out(self, worker: str) -> Path:
        return self.folder / f"{worker}.out"

    def err(self, worker: str) -> Path:
        return self.folder / f"{worker}.err"

    def release(self, timeout: float = 30.0) -> None:
        """Say go once every worker has bootstrapped, so their work starts at one moment."""
        deadline = time.monotonic() + timeout
        while not all(self.ready(w).exists() for w in self.procs):
            dead = {w: p.returncode for w, p in self.procs.items() if p.poll() is not None}
            if dead or time.monotonic() > deadline:
                self.end()
                raise AssertionError(f"workers not ready (exited: {dead}): {self.outputs()}")
            time.sleep(0.01)
        self.go.touch()

    def finish(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Wait for every worker; answers what each printed. Any failure ends them all."""
        deadline = time.monotonic() + timeout
        answers: list[dict[str, Any]] = []
        for worker, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.end()
                raise AssertionError(f"{worker} did not finish within {timeout:g}s") from None
            if proc.returncode != 0:
                self.end()
                raise AssertionError(f"{worker} exited {proc.returncode}: {self.outputs()}")
            answers.append(json.loads(self.out(worker).read_text().strip().splitlines()[-1]))
        return answers

    def end(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()  # SIGKILL to this child's own pid
                proc.wait(timeout=10)

    def outputs(self) -> dict[str, str]:
        return {w: self.err(w).read_text()[-2000:] for w in self.procs if self.err(w).exists()}


if __name__ == "__main__":
    sys.exit(main())

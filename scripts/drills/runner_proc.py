"""A runner in a process of its own, for the crash walks, the chaos drill and the runner bench.

Run as ``python -m scripts.drills.runner_proc --url URL --worker NAME --calls FILE [knobs]`` from
the project root. It bootstraps a runledger on an initialised store (it never creates tables),
registers one test module, and runs the runner's loop until SIGTERM or SIGINT. Every perform and
revert call is appended as one JSON line to ``--calls`` (opened with ``O_APPEND`` for each line),
so the parent counts every call across processes and across kills. A line is written at the
moment the call changes the world, so the file's order is the world's: a perform once it has
made its refs (after its delay; a hanging perform says so before it hangs), a revert as it gives
back (before its sleep, which stands for the answer travelling back to core).

The module's world is deterministic by idempotency key: ``perform`` answers the same refs for
the same key (``<key>/r<i>``), which is what makes a reclaimed dispatch safe. A step's params
may say how many refs it makes (``count``) and how long its perform takes (``delay_ms``).

Outages (``--outage START:LENGTH,...`` in seconds after ``--epoch``, a wall-clock time every
process is given alike) are windows in which every call answers a retryable "shard down"; such a
call's line says ``"outage": true``. Settings come from the environment, as a runner's do, and
only what the arguments name overrides them.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.services.running.runner import Observer, Runner, TickReport
from runledger.application.services.sweep.pacing import Swept, Wake
from runledger.application.settings import Settings

PROG = "scripts.drills.runner_proc"  # python -m PROG, from the project root
MODULE = "crashworld"
ACTION = "crashworld.spawn"
KIND = "creature"
SHARD_DOWN = {"ok": False, "error": "shard down"}


def refs_for(key: str, count: int) -> list[str]:
    """What a perform under ``key`` makes: the same names on every attempt."""
    return [f"{key}/r{i}" for i in range(count)]


def append_line(path: Path, line: dict[str, Any]) -> None:
    """One ``write`` on an ``O_APPEND`` descriptor: lines from many processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def read_calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Knobs:
    """How the test module behaves; probabilities are per call."""

    hang_perform: bool = False
    perform_ms: int = 0  # each perform takes up to this long, at random
    revert_ms: int = 0
    resources: int = 2
    perform_fail: float = 0.0
    revert_fail: float = 0.0
    revert_terminal: float = 0.0
    revert_partial: float = 0.0
    seed: int = 0
    epoch: float = 0.0
    outages: tuple[tuple[float, float], ...] = ()

    def in_outage(self, now: float) -> bool:
        return any(start <= now - self.epoch < start + length for start, length in self.outages)


@dataclass
class ScriptedWorld:
    """The module a crash walk drives: it says what it was asked, and answers by its knobs."""

    calls: Path
    worker: str
    knobs: Knobs
    rng: random.Random = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.knobs.seed}:{self.worker}")

    def register(self, registry: Registry, budget_ms: int | None) -> None:
        registry.module(MODULE).action(
            ACTION, perform=self.perform, revert=self.revert, budget_ms=budget_ms
        )

    def perform(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        if self.knobs.in_outage(time.time()):
            self._say("perform", idempotency_key, [], "fail", outage=True)
            return dict(SHARD_DOWN)
        refs = refs_for(idempotency_key, int(params.get("count", self.knobs.resources)))
        with self.lock:
            fails = self.rng.random() < self.knobs.perform_fail
            delay = self.rng.uniform(0, self.knobs.perform_ms / 1000)
        delay += float(params.get("delay_ms", 0)) / 1000
        if self.knobs.hang_perform:
            self._say("perform", idempotency_key, [], "hang")
            threading.Event().wait()  # for ever: only a kill or the deadline ends this call
        time.sleep(delay)
        self._say("perform", idempotency_key, [] if fails else refs, "fail" if fails else "ok")
        if fails:
            return {"ok": False, "error": "the shard refused the spawn"}
        return {"ok": True, "resources": [{"kind": KIND, "ref": ref} for ref in refs]}

    def revert(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        refs = [str(r["ref"]) for r in resources]
        with self.lock:
            roll = self.rng.random()
        knobs = self.knobs
        failed: list[str] = []
        more: dict[str, Any] = {}
        if knobs.in_outage(time.time()):
            outcome, answer, more = "retry", dict(SHARD_DOWN), {"outage": True}
        elif roll < knobs.revert_terminal:
            outcome, answer = "terminal", {"ok": False, "retry": False, "error": "banned here"}
        elif roll < knobs.revert_terminal + knobs.revert_fail:
            outcome, answer = "retry", {"ok": False, "error": "the shard timed out"}
        elif refs and roll < knobs.revert_terminal + knobs.revert_fail + knobs.revert_partial:
            failed = refs[:1]
            outcome, answer = "partial", {"ok": True, "failed": failed}
        else:
            outcome, answer = "ok", {"ok": True}
        self._say("revert", idempotency_key, refs, outcome, failed=failed, **more)
        time.sleep(knobs.revert_ms / 1000)
        return answer

    def _say(self, call: str, key: str, refs: list[str], outcome: str, **more: Any) -> None:
        append_line(
            self.calls,
            {
                "call": call,
                "key": key,
                "refs": refs,
                "outcome": outcome,
                "worker": self.worker,
                "pid": os.getpid(),
                "t": time.time(),
                **more,
            },
        )


class BeatingRunner(Runner):
    """The runner, saying after every tick how many it has finished, so a parent can tell
    when a tick that was in flight (say, while the process was stopped) is over."""

    def __init__(self, *, heartbeat: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.heartbeat = heartbeat
        self.beats = 0

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        report = super().tick(stop)
        self._said()
        return report

    def _woken(self, stop: threading.Event) -> Swept:
        swept = super()._woken(stop)
        self._said()
        return swept

    def _said(self) -> None:
        self.beats += 1
        partial = self.heartbeat.with_suffix(".tmp")
        partial.write_text(str(self.beats))
        partial.replace(self.heartbeat)


def read_beats(heartbeat: Path) -> int:
    return int(heartbeat.read_text()) if heartbeat.exists() else 0


def outage_windows(text: str) -> tuple[tuple[float, float], ...]:
    """``"5:2,30:2.5"``: windows of ``length`` seconds, ``start`` seconds after the epoch."""
    windows = []
    for item in filter(None, text.split(",")):
        start, length = item.split(":")
        windows.append((float(start), float(length)))
    return tuple(windows)


def outage_text(windows: Sequence[tuple[float, float]]) -> str:
    return ",".join(f"{start:.3f}:{length:.3f}" for start, length in windows)


def tick_log(path: Path, worker: str, then: Observer | None) -> Observer:
    """An observer that appends each tick's legs and work to ``path``, then tells ``then``."""

    def observe(report: TickReport, advance_s: float, cleanup_s: float) -> None:
        done = report.advance
        line = {
            "worker": worker,
            "t": time.time(),
            "advance_s": advance_s,
            "cleanup_s": cleanup_s,
            "dispatched": done.dispatched,
            "completed": done.completed,
            "given_back": sum(s.reverted for s in report.swept.values()),
            "runs_swept": len(report.swept),
        }
        append_line(path, line)
        if then is not None:
            then(report, advance_s, cleanup_s)

    return observe


def _await_go(ready: Path, go: Path, stop: threading.Event) -> None:
    ready.touch()
    while not go.exists() and not stop.is_set():
        time.sleep(0.005)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--url", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--calls", required=True, type=Path)
    parser.add_argument("--hang-perform", action="store_true")
    parser.add_argument("--perform-ms", type=int, default=0)
    parser.add_argument("--revert-ms", type=int, default=0)
    parser.add_argument("--resources", type=int, default=2, help="refs per perform by default")
    parser.add_argument("--perform-fail", type=float, default=0.0)
    parser.add_argument("--revert-fail", type=float, default=0.0)
    parser.add_argument("--revert-terminal", type=float, default=0.0)
    parser.add_argument("--revert-partial", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-ms", type=int, default=None, help="the action's budget")
    parser.add_argument("--epoch", type=float, default=0.0, help="time.time() outages count from")
    parser.add_argument("--outage", type=outage_windows, default=(), help="START:LENGTH,...")
    parser.add_argument("--claim-slack-s", type=float, default=None)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--ready", type=Path, help="touched once bootstrapped")
    parser.add_argument("--go", type=Path, help="start ticking once this file exists")
    parser.add_argument("--heartbeat", type=Path, help="holds the number of ticks finished")
    parser.add_argument("--ticks", type=Path, help="one JSON line per tick: its legs and work")
    return parser


def settings_for(args: argparse.Namespace) -> Settings:
    """The environment's settings (retry delays and all), with only what the arguments give."""
    given: dict[str, object] = {"database_url": args.url}
    if args.claim_slack_s is not None:
        given["claim_slack_s"] = args.claim_slack_s
    return Settings.model_validate({**Settings.from_env().model_dump(), **given})


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` shows where a runner is stuck
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    knobs = Knobs(
        hang_perform=args.hang_perform,
        perform_ms=args.perform_ms,
        revert_ms=args.revert_ms,
        resources=args.resources,
        perform_fail=args.perform_fail,
        revert_fail=args.revert_fail,
        revert_terminal=args.revert_terminal,
        revert_partial=args.revert_partial,
        seed=args.seed,
        epoch=args.epoch,
        outages=args.outage,
    )
    registry = Registry()
    ScriptedWorld(args.calls, args.worker, knobs).register(registry, args.budget_ms)
    settings = settings_for(args)
    started = time.monotonic()
    with bootstrap(settings, registry) as rl:
        if args.ready is not None and args.go is not None:
            _await_go(args.ready, args.go, stop)
        runner = (
            rl.runner(args.worker)
            if args.heartbeat is None
            else BeatingRunner(
                runs=rl.runs,
                starts=rl.starts,
                cleanup=rl.cleanup,
                reconciler=rl.reconciler,
                worker=args.worker,
                fleet=rl.fleet,
                loaded=rl.loaded,
                settings=rl.settings,
                wake=Wake(rl.app.recorder, rl.app.hearing.heard()),
                heartbeat=args.heartbeat,
            )
        )
        if args.ticks is not None:
            runner.observe = tick_log(args.ticks, args.worker, runner.observe)
        ticks = runner.run(args.interval, stop)
    seconds = round(time.monotonic() - started, 3)
    print(json.dumps({"worker": args.worker, "ticks": ticks, "seconds": seconds}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The console's run page for a big run: time to first byte and to the last byte of
`GET /runs/{id}` (a signed-in session) beside the API's JSON of the same run, over a real
`runledger serve --no-runner`.

    python -m scripts.bench_console [--store sqlite|postgres] [--entries 1000] [--lines 5000]
                                    [--requests 100]

The run is built through the real services, as a runner would play it: one phase of steps of a
module whose calls hiccup a set number of times per key before they succeed, so every entry is
recorded by a step and given back by a revert, and every line of the run's log comes from its
own activity (a step's failed and succeeded attempts, each revert call, the run's start and
end). Until the run page is on the branch (it answers 404), the runs page `/runs` is measured in
its place.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.spec import MAX_STEPS
from scripts.bench_api import CLI, _wait_up, spare_port
from scripts.bench_history import fresh_store

ACTION = "bench.spawn"
STEP_ATTEMPTS = 3  # a step's attempts under one key; the last failure aborts the run
WARM_UP = 3
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Hiccups:
    """A module whose performs and reverts fail a set number of times per key, then succeed."""

    perform_failures: int
    revert_failures: int
    calls: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, registry: Registry) -> None:
        registry.module("bench").action(ACTION, perform=self.perform, revert=self.revert)

    def _fails(self, key: str, failures: int) -> bool:
        with self.lock:
            self.calls[key] += 1
            return self.calls[key] <= failures

    def perform(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        if self._fails(f"perform|{idempotency_key}", self.perform_failures):
            return {"ok": False, "error": "the shard hiccuped"}
        made = [
            {"kind": "crate", "ref": f"{idempotency_key}/{i}", "payload": {"n": i}}
            for i in range(int(params["count"]))
        ]
        return {"ok": True, "resources": made}

    def revert(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        if self._fails(f"revert|{idempotency_key}", self.revert_failures):
            return {"ok": False, "error": "the shard hiccuped"}
        return {"ok": True}


@dataclass(frozen=True)
class Shape:
    """How many steps, and how many failed calls per step, make about ``lines`` log lines."""

    steps: int
    perform_failures: int
    revert_failures: int

    @staticmethod
    def of(entries: int, lines: int) -> Shape:
        steps = max(1, min(entries, MAX_STEPS, lines // 2))
        per_step = max(2, round(lines / steps))  # a success, and a revert that gives back
        perform_failures = min(STEP_ATTEMPTS - 1, per_step - 2)
        return Shape(steps, perform_failures, per_step - 2 - perform_failures)

    def spec(self, entries: int) -> dict[str, Any]:
        counts = [entries // self.steps + (i < entries % self.steps) for i in range(self.steps)]
        steps = [
            {"id": f"s{i}", "action": ACTION, "params": {"count": n}} for i, n in enumerate(counts)
        ]
        return {"name": "bench: a big run", "phases": [{"id": "spawn", "steps": steps}]}


def big_run(url: str, entries: int, lines: int) -> tuple[UUID, str]:
    """The run, played by a runner in this process until it is given back; and a token."""
    shape = Shape.of(entries, lines)
    settings = Settings(
        database_url=url,
        builtin_modules="",
        steps_per_run_tick=shape.steps,
        steps_per_tick=shape.steps,
        cleanup_groups_per_run=shape.steps,
        max_revert_attempts=max(3, shape.revert_failures + 1),
        retry_delays_s=(0.0,),
        retry_jitter=0.0,
    )
    init_store(settings)
    registry = Registry()
    Hiccups(shape.perform_failures, shape.revert_failures).install(registry)
    with bootstrap(settings, registry) as rl:
        run = rl.runs.start(shape.spec(entries))
        runner = rl.runner("bench")
        for _ in range(STEP_ATTEMPTS + shape.revert_failures + 5):
            runner.tick()
            if _given_back(rl, run):
                break
        else:
            raise SystemExit(f"run {run} was not given back: {rl.answers.run_detail(run).run}")
        detail = rl.answers.run_detail(run)
        total = rl.answers.log_page(run, 1, None).total
        made = {group.state: group.count for group in detail.entries}
        placeholders = made.pop("superseded", 0)
        print(
            f"run {run}: {sum(made.values()):,} entries {made} (and {placeholders:,} steps' "
            f"placeholders, superseded), {total:,} log lines; {shape.steps:,} steps, each "
            f"failed {shape.perform_failures} times and its revert {shape.revert_failures}"
        )
        token = rl.tokens.issue("bench", "operator", by="bench").secret
    return run, token


def _given_back(rl: Runledger, run: UUID) -> bool:
    summary = rl.answers.run_detail(run).run
    return summary.status != "running" and summary.cleanup_status == "complete"


def signed_in(base: str, token: str) -> httpx.Client:
    """A console session, signed in through the form as a person would."""
    client = httpx.Client(base_url=base, timeout=60)
    csrf = _CSRF.search(client.get("/signin").text)
    if csrf is None:
        raise SystemExit("the sign-in page has no CSRF token")
    answer = client.post("/signin", data={"token": token, "csrf": csrf.group(1), "next": "/"})
    if answer.status_code != 303:
        raise SystemExit(f"signing in answered {answer.status_code}: {answer.text[:200]}")
    return client


@dataclass(frozen=True)
class Timed:
    first_ms: list[float]
    last_ms: list[float]
    size: int


def timed(client: httpx.Client, path: str, requests: int, headers: dict[str, str]) -> Timed:
    """Each request's time to its first body byte and to its last, one request at a time."""
    first: list[float] = []
    last: list[float] = []
    size = 0
    for i in range(WARM_UP + requests):
        started = time.perf_counter()
        with client.stream("GET", path, headers=headers) as answer:
            chunks = answer.iter_raw()
            body = next(chunks, b"")
            reached = time.perf_counter()
            size = len(body) + sum(len(chunk) for chunk in chunks)
            done = time.perf_counter()
        if answer.status_code != 200:
            raise SystemExit(f"GET {path} answered {answer.status_code}")
        if i >= WARM_UP:
            first.append((reached - started) * 1000)
            last.append((done - started) * 1000)
    return Timed(first, last, size)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def run_page_path(client: httpx.Client, run: UUID) -> str:
    """The run page when this branch has it; the runs page otherwise, said so."""
    status = client.get(f"/runs/{run}").status_code
    if status == 200:
        return f"/runs/{run}"
    print(f"GET /runs/{run} answered {status}: no run page on this branch; measuring /runs")
    return "/runs"


def measure(url: str, run: UUID, token: str, requests: int) -> None:
    port = spare_port()
    env = os.environ | {"RUNLEDGER_DATABASE_URL": url, "RUNLEDGER_BUILTIN_MODULES": ""}
    server = subprocess.Popen(
        [*CLI, "serve", "--no-runner", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(base)
        with (
            closing(signed_in(base, token)) as console,
            httpx.Client(base_url=base, timeout=60) as api,
        ):
            bearer = {"Authorization": f"Bearer {token}"}
            report(
                [
                    ("console", console, run_page_path(console, run), {}),
                    ("API (baseline)", api, f"/admin/events/runs/{run}", bearer),
                    ("API, the log", api, f"/admin/events/runs/{run}/log", bearer),
                ],
                requests,
            )
    finally:
        server.send_signal(signal.SIGTERM)  # our own child, by its pid
        server.wait(timeout=30)


Case = tuple[str, httpx.Client, str, dict[str, str]]


def report(cases: list[Case], requests: int) -> None:
    """One line per case; ``vs API`` is its median first byte over the API baseline's."""
    print(f"load {_load()} (1, 5, 15 min, as uptime says) on {os.cpu_count()} cores")
    print(f"{requests} requests each, one at a time, after {WARM_UP} to warm up; median and p95")
    found = [
        (f"{who} GET {_short(path)}", timed(client, path, requests, headers))
        for who, client, path, headers in cases
    ]
    baseline = statistics.median(found[1][1].first_ms)
    print(
        f"{'':48} {'first byte':>10} {'p95':>8}   {'last byte':>9} {'p95':>8}"
        f"   {'bytes':>9}  vs API"
    )
    for label, took in found:
        first = statistics.median(took.first_ms)
        print(
            f"{label:48} {first:8.1f}ms {p95(took.first_ms):6.1f}ms   "
            f"{statistics.median(took.last_ms):7.1f}ms {p95(took.last_ms):6.1f}ms   "
            f"{took.size:9,}   {first / baseline:5.2f}"
        )
    print(f"load {_load()}")


def _short(label: str) -> str:
    return re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "{id}", label)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--lines", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    if args.entries < 1 or args.lines < 2 or args.requests < 1:
        sys.exit("--entries, --lines and --requests must be positive (--lines at least 2)")
    url, drop = fresh_store(args.store)
    try:
        started = time.perf_counter()
        run, token = big_run(url, args.entries, args.lines)
        print(f"{args.store}: built in {time.perf_counter() - started:.1f}s")
        measure(url, run, token, args.requests)
    finally:
        drop()


if __name__ == "__main__":
    main()

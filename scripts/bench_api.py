"""The admin API under load: requests per second and p50/p99 latency, over HTTP beside the same
reads done in-process (the ratio is the HTTP layer's cost), and a serve process's memory.

    python -m scripts.bench_api [--store sqlite|postgres] [--runs 10000] [--seconds 10]

Needs wrk (Debian package `wrk`) on the PATH. A store of --runs finished runs (five entries
each, given back) is written first; `runledger serve --no-runner` is started on a spare port.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.pages import RunFilter
from scripts.bench_history import NOW, fresh_store, given_back_run
from scripts.loads import in_process, wrk

CLI = [sys.executable, "-c", "from runledger.application.cli.app import main; main()"]


def populate(rl: Runledger, runs: int) -> UUID:
    """``runs`` finished runs, newest last; answers the newest."""
    last: Any = None
    batch: list[Any] = []
    for i in range(runs):
        made = given_back_run(5, NOW - timedelta(seconds=runs - i))
        last = made[0]
        batch += made
        if len(batch) >= 600:
            rl.app.save(*batch)
            batch = []
    if batch:
        rl.app.save(*batch)
    rl.projector.catch_up()
    return UUID(str(last.id))


def spare_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")
    url, drop = fresh_store(args.store)
    settings = Settings(database_url=url)
    init_store(settings)
    rl = bootstrap(settings, Registry())
    try:
        started = time.perf_counter()
        newest = populate(rl, args.runs)
        print(f"{args.store}: {args.runs:,} runs written in {time.perf_counter() - started:.1f}s")
        token = rl.tokens.issue("bench", "operator", by="bench").secret
        measure(rl, url, token, newest, args.seconds)
    finally:
        rl.close()
        drop()


def measure(rl: Runledger, url: str, token: str, run_id: UUID, seconds: int) -> None:
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
        print(f"serve pid {server.pid}: {rss_mb(server.pid):.0f} MB after start")
        cases: list[tuple[str, str, str, Callable[[], object]]] = [
            (
                "GET one run",
                f"{base}/admin/events/runs/{run_id}",
                "GET",
                lambda: rl.answers.run_detail(run_id),
            ),
            (
                "GET runs (50)",
                f"{base}/admin/events/runs?limit=50",
                "GET",
                lambda: rl.answers.run_page(RunFilter(), 50, None),
            ),
            (
                "POST cleanup",
                f"{base}/admin/events/runs/{run_id}/cleanup",
                "POST",
                lambda: rl.cleanup.manual_cleanup(run_id, "bench"),
            ),
        ]
        total = 0
        print(f"load {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
        print(
            f"{'':16} {'HTTP req/s':>11} {'p50 ms':>8} {'p99 ms':>8}   "
            f"{'in-process/s':>12} {'p50 ms':>8} {'p99 ms':>8}   ratio"
        )
        for label, target, method, direct in cases:
            served = wrk(target, token, seconds, 8, method)
            total += served.done
            own, o50, o99 = in_process(direct, seconds / 2)
            print(
                f"{label:16} {served.rate:11,.0f} {served.p50_ms:8.2f} {served.p99_ms:8.2f}   "
                f"{own:12,.0f} {o50:8.2f} {o99:8.2f}   {served.rate / own:5.2f}"
            )
        while total < 10_000:  # memory is read after at least ten thousand requests
            total += wrk(cases[0][1], token, seconds, 8).done
        print(f"serve after {total:,} requests: {rss_mb(server.pid):.0f} MB resident")
        print(f"load {os.getloadavg()[0]:.2f} (1 min)")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def _wait_up(base: str, path: str = "/healthz") -> None:
    """Poll ``path`` until it answers 200; a refused connection means not up yet, and the last
    answer or error is what the failure reports."""
    deadline = time.monotonic() + 30
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(f"{base}{path}", timeout=1)
        except httpx.HTTPError as error:
            last = f"{type(error).__name__}: {error}"
        else:
            if answer.status_code == 200:
                return
            last = f"HTTP {answer.status_code}"
        time.sleep(0.1)
    raise SystemExit(f"serve did not come up in 30 s (last: {last})")


if __name__ == "__main__":
    main()

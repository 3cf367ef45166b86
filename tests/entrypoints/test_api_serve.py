"""End to end against a real `runledger serve` process with its runner inside, on an SQLite file
and on PostgreSQL: tokens from `runledger token create`, a run started over HTTP that completes
and is given back, a manual cleanup over HTTP by a named operator, the actor on the events, and
a graceful stop on SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.support.api_support import bearer
from tests.support.forked_cli import ForkedCli

RUNLEDGER = [sys.executable, "-c", "from runledger.application.cli.app import main; main()"]
SPAWN = "sandbox.spawn"
WAIT_S = 30.0

pytestmark = pytest.mark.slow


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def environment(store_url: str, world: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    return environ | {
        "RUNLEDGER_DATABASE_URL": store_url,
        "RUNLEDGER_BUILTIN_MODULES": "sandbox",
        "RUNLEDGER_SANDBOX_PATH": str(world),
        "EVENT_RETRY_DELAYS_S": "0",
        "COLUMNS": "200",
    }


def token(cli: ForkedCli, env: dict[str, str], cwd: Path, name: str, role: str) -> str:
    """A token made by `runledger token create` (a process forked from the module's CLI)."""
    done = cli.run("token", "create", name, "--role", role, "--json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    secret: str = json.loads(done.stdout)["secret"]
    return secret


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    client: httpx.Client
    log: Path
    secret: str
    """alice's, an operator's token from `runledger token create`"""

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def until(self, what: str, done: Callable[[], Any]) -> Any:
        """Poll ``done`` until it answers something truthy, or fail saying what never happened."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve exited: {self.output()}"
            found = done()
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"{what} within {WAIT_S:g}s; serve said: {self.output()}")


@pytest.fixture
def world(tmp_path: Path) -> SandboxWorld:
    return SandboxWorld(tmp_path / "sandbox.sqlite3")


@pytest.fixture
def env(store_url: str, world: SandboxWorld) -> dict[str, str]:
    return environment(store_url, world.path)


@pytest.fixture
def served(env: dict[str, str], tmp_path: Path, cli_server: ForkedCli) -> Iterator[Served]:
    port = spare_port()
    log = tmp_path / "serve.log"
    command = [*RUNLEDGER, "serve", "--port", str(port), "--interval", "0.1", "--worker", "e2e"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        secret = token(cli_server, env, tmp_path, "alice", "operator")  # while serve starts
        it = Served(process, client, log, secret)
        it.until("serve answered /healthz", lambda: _answers(client, "/healthz"))
        yield it
    finally:
        client.close()
        if process.poll() is None:
            process.kill()  # this test's own child, by its pid
            process.wait(timeout=10)


def _answers(client: httpx.Client, path: str) -> bool:
    try:
        return client.get(path).status_code == 200
    except httpx.TransportError:
        return False


def a_run(count: int = 2) -> dict[str, Any]:
    steps = [{"id": "spawn", "action": SPAWN, "params": {"count": count}}]
    return {"name": "e2e", "phases": [{"id": "p1", "steps": steps}]}


def detail(served: Served, secret: str, run: UUID) -> dict[str, Any]:
    answer = served.client.get(f"/admin/events/runs/{run}", headers=bearer(secret))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def given_back(served: Served, secret: str, run: UUID, status: str) -> bool:
    summary = detail(served, secret, run)["run"]
    return bool(summary["status"] == "completed" and summary["cleanup_status"] == status)


def test_a_served_run_is_given_back_cleaned_up_by_a_named_operator_and_serve_stops_on_sigterm(
    served: Served, world: SandboxWorld, store_url: str
) -> None:
    secret = served.secret
    alice = bearer(secret)
    started = served.client.post("/admin/events/runs", json=a_run(), headers=alice)
    assert started.status_code == 201, started.text
    run = UUID(started.json()["run"]["run_id"])
    served.until("the run was given back", lambda: given_back(served, secret, run, "complete"))
    assert world.things() == {}

    world.set_fault(SPAWN, "terminal")  # the shard refuses every revert: nothing to retry
    answer = served.client.post("/admin/events/runs", json=a_run(), headers=alice)
    stuck = UUID(answer.json()["run"]["run_id"])
    served.until(
        "the run ended incomplete", lambda: given_back(served, secret, stuck, "incomplete")
    )
    assert len(world.things()) == 2
    world.clear_faults()
    cleaned = served.client.post(f"/admin/events/runs/{stuck}/cleanup", headers=alice)
    assert cleaned.status_code == 200, cleaned.text
    assert cleaned.json()["by"] == "alice"
    served.until(
        "the manual cleanup gave back", lambda: given_back(served, secret, stuck, "complete")
    )
    assert world.things() == {}
    replay = served.client.get(f"/admin/events/runs/{stuck}/replay", headers=alice).json()
    acted = {(line["event"], line["actor"]) for line in replay["lines"]}
    assert {("Started", "alice"), ("AttemptsReset", "alice")} <= acted

    # The runner inside serve counted its module calls and ticks into the one /metrics.
    metrics = served.client.get("/metrics").text
    assert 'runledger_module_call_seconds_count{action="sandbox.spawn",outcome="ok"}' in metrics
    assert (
        'runledger_module_call_seconds_count{action="sandbox.spawn",outcome="terminal"}' in metrics
    )
    assert 'runledger_leg_seconds_count{leg="cleanup"}' in metrics
    ticks = [line for line in metrics.splitlines() if line.startswith("runledger_runner_ticks")]
    assert ticks and 'worker="e2e"' in ticks[0], ticks  # its own series, as a runner's port says

    served.process.send_signal(signal.SIGTERM)  # our own child, by its pid
    try:
        code = served.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"serve ignored SIGTERM: {served.output()}") from None
    assert code == 0, served.output()
    assert runner_states(store_url) == {"e2e": "stopped"}


def runner_states(store_url: str) -> dict[str, str]:
    """What the runner records say, read from the store by a runledger of our own."""
    with bootstrap(Settings.model_validate({"database_url": store_url}), Registry()) as rl:
        rl.projector.catch_up()
        return {r.worker: r.state for r in rl.fleet.listing(rl.clock())}

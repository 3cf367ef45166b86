"""A real `runledger runner --metrics-port` process: its own series keyed by its id, a heartbeat
timestamp that moves, the modules it found (one failed to start), build and process metrics,
and a port already taken said in one sentence."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.entrypoints.test_api_serve import RUNLEDGER, environment, spare_port
from tests.entrypoints.test_metrics import Samples, named, samples

WAIT_S = 30.0

pytestmark = pytest.mark.slow


@pytest.fixture
def env(store_url: str, tmp_path: Path) -> dict[str, str]:
    modules = tmp_path / "modules"
    broken = modules / "broken"
    broken.mkdir(parents=True)
    (broken / "module.toml").write_text(
        'name = "broken"\nsite = "shard-9"\napi = "2.0"\nentry = "code.py:register"\n'
    )
    (broken / "code.py").write_text("def register(ctx):\n    raise ValueError('no shard')\n")
    return environment(store_url, tmp_path / "sandbox.sqlite3") | {
        "RUNLEDGER_MODULES_DIR": str(modules)
    }


@pytest.fixture
def runner(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = spare_port()
    log = tmp_path / "runner.log"
    command = [*RUNLEDGER, "runner", "--interval", "0.1", "--worker", "w", "--metrics-port"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, str(port)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()  # this test's own child, by its pid
            process.wait(timeout=10)
        print(log.read_text(errors="replace")[-3000:])


def scraped(process: subprocess.Popen[bytes], port: int, name: str) -> Samples:
    """The runner's metrics once ``name`` is among them."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, "the runner exited"
        try:
            found = samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text)
        except httpx.TransportError:
            found = {}
        if named(found, name):
            return found
        time.sleep(0.1)
    raise AssertionError(f"no {name} within {WAIT_S:g}s")


def heartbeat(found: Samples) -> float:
    (value,) = named(found, "runledger_runner_heartbeat_timestamp_seconds").values()
    return value


def test_a_runner_process_serves_its_own_series_on_its_metrics_port(
    runner: tuple[subprocess.Popen[bytes], int],
) -> None:
    process, port = runner
    found = scraped(process, port, "runledger_runner_ticks_total")
    (keys,) = named(found, "runledger_runner_ticks_total")
    assert dict(keys)["worker"] == "w" and len(dict(keys)["runner_id"]) == 36
    modules = {dict(k)["module"]: v for k, v in named(found, "runledger_module_up").items()}
    assert modules == {"broken": 0, "sandbox": 1}
    assert named(found, "runledger_build_info") and named(found, "process_cpu_seconds_total")
    first = heartbeat(found)
    deadline = time.monotonic() + WAIT_S
    while heartbeat(scraped(process, port, "runledger_runner_ticks_total")) <= first:
        assert time.monotonic() < deadline, "the heartbeat never moved"
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)  # our own child, by its pid
    assert process.wait(timeout=WAIT_S) == 0


def test_a_metrics_port_already_taken_is_one_sentence_and_exit_1(
    env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*RUNLEDGER, "runner", "--metrics-port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"--metrics-port: cannot listen on 127.0.0.1:{port}" in done.stdout


def test_a_metrics_port_out_of_range_is_a_usage_error(env: dict[str, str]) -> None:
    done = subprocess.run(
        [*RUNLEDGER, "runner", "--metrics-port", "70000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--metrics-port: must be a port from 1 to 65535" in done.stdout

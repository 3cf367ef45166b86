"""Issue 9: an outage of the database is one warning when it starts and one when it ends, and
the runner resumes by itself. A real runner process reaches the shared PostgreSQL through a
proxy of the test's own, which the test cuts and mends; the server itself is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.settings import Settings
from tests.support.proxy import Proxy

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def wait_for(done: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g}s for {what}")
        time.sleep(0.1)


STALL = """
import time
from pathlib import Path


def register(ctx):
    marker = Path(ctx.settings["RUNLEDGER_STALL_MARKER"])

    def perform(params, idempotency_key, run_id):
        if not marker.exists():
            marker.touch()  # the test cuts the store now, while this first call is out
            time.sleep(1.5)
        return {"ok": True, "resources": [{"kind": "thing", "ref": idempotency_key}]}

    ctx.action("stall.spawn", perform=perform, revert=lambda **_: {"ok": True})
"""


def stall_module(folder: Path) -> Path:
    home = folder / "modules" / "stall"
    home.mkdir(parents=True)
    (home / "module.toml").write_text(
        'name = "stall"\nsite = "stall"\napi = "2.0"\nentry = "stall.py:register"\n'
    )
    (home / "stall.py").write_text(STALL)
    return home.parent


@pytest.mark.parametrize("trouble", ["cut", "black_hole"])
def test_a_lost_database_is_one_warning_when_it_starts_and_one_when_it_ends(
    proxied: tuple[str, Proxy], tmp_path: Path, trouble: str
) -> None:
    """Cut: connections dropped, new ones refused. Black-holed (issue 29): connections held and
    nothing answered, which only the store's bounds end (store/bounds.py), here 1 s + 2 s."""
    url, proxy = proxied
    marker = tmp_path / "cut-now"
    env = {
        **os.environ,
        "RUNLEDGER_DATABASE_URL": url,
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        "RUNLEDGER_MODULES_DIR": str(stall_module(tmp_path)),
        "RUNLEDGER_STALL_MARKER": str(marker),
        # How long a call waits for a connection (5 s by default). The library tries a failed
        # call up to ten times, so the outage is said three waits after the pool runs dry; and
        # the pool retries its connections 1, 3, 7, 15 s after it lost them, so the sooner the
        # outage is said, the sooner the mend is seen.
        "POSTGRES_CONNECT_TIMEOUT": "1",
        "RUNLEDGER_STORE_TIMEOUT_S": "1",
    }
    spec = {
        "name": "stalled",
        "phases": [
            {"id": "p", "steps": [{"id": f"s{i}", "action": "stall.spawn"} for i in range(3)]}
        ],
    }
    with bootstrap(Settings.from_env(env)) as rl:  # the runner's own modules, in-process
        for _ in range(3):
            rl.runs.start(spec)
    err = tmp_path / "runner.err"
    with err.open("wb") as sink:
        runner = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from runledger.application.cli.app import main; main()",
                "runner",
                "--interval",
                "0.1",
                "--worker",
                "outage",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    try:
        # The cut lands in the middle of a leg, while a perform is out and runs are waiting.
        wait_for(marker.exists, "a perform to be under way")
        getattr(proxy, trouble)()
        wait_for(lambda: "in trouble" in err.read_text(), "the runner to notice the outage")
        time.sleep(0.5)  # several ticks into the outage
        proxy.mend()
        wait_for(lambda: "clear again" in err.read_text(), "the runner to resume by itself")
        time.sleep(1.0)
    finally:
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=20)
    said = err.read_text()
    assert runner.returncode == 0, said
    assert said.count("in trouble") == 1, said
    assert said.count("clear again") == 1, said
    assert "Traceback" not in said, said

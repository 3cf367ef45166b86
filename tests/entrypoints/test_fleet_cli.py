"""`runledger runners` through the real CLI, on the store directly and through a server (the API
served in the test's process), and a real `runledger runner` process recording itself: live
while it ticks, stopped after SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.keyed import terminal_person
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.entrypoints.test_cli import RUNLEDGER
from tests.entrypoints.test_cli_json import THROUGH_A_SERVER
from tests.support.forked_cli import ForkedCli
from tests.support.remote_cli import Served

HOSTILE = "[red]x[/red]<script>\x1b[2J"


Cli = Callable[..., str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkedCli]:
    """Each command in a fresh process, forked from one that imported the CLI once."""
    forked = ForkedCli(tmp_path_factory.mktemp("cli"))
    yield forked
    forked.close()


@pytest.fixture(params=["direct", "remote"])
def cli(request: pytest.FixtureRequest, server: ForkedCli, store_url: str) -> Iterator[Cli]:
    if request.param == "remote" and not store_url.startswith("sqlite"):
        pytest.skip(THROUGH_A_SERVER)
    served: dict[str, Served] = {}

    def through(folder: Path, url: str) -> dict[str, str]:
        if url not in served:
            sandbox = {"RUNLEDGER_SANDBOX_PATH": str(folder / "sandbox.sqlite3")}
            served[url] = Served(Settings(database_url=url, module_settings=sandbox))
        return served[url].env(terminal_person())

    def run(folder: Path, url: str, *args: str) -> str:
        env = {"RUNLEDGER_DATABASE_URL": url, "XDG_CONFIG_HOME": str(folder / "config")}
        if request.param == "remote":
            env |= through(folder, url)
        done = server.run(*args, cwd=folder, env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
        return done.stdout

    try:
        yield run
    finally:
        for one in served.values():
            one.close()


def tick(folder: Path, url: str, worker: str) -> None:
    """One tick in-process, with the built-in modules the CLI would load: the listing is what
    these tests run through the CLI."""
    sandbox = {"RUNLEDGER_SANDBOX_PATH": str(folder / "sandbox.sqlite3")}
    with bootstrap(Settings(database_url=url, module_settings=sandbox)) as rl:
        rl.runner(worker).once()


def test_runners_lists_a_hostile_worker_name_as_text(
    cli: Cli, tmp_path: Path, store_url: str
) -> None:
    assert "No runners have recorded themselves yet." in cli(tmp_path, store_url, "runners")
    tick(tmp_path, store_url, "[red]x[/red]<script>")
    table = cli(tmp_path, store_url, "runners")
    assert "[red]x[/red]<script>" in table and "stopped" in table and "sandbox" in table
    (found,) = json.loads(cli(tmp_path, store_url, "runners", "--json"))
    assert found["worker"] == "[red]x[/red]<script>" and found["state"] == "stopped"
    assert found["modules"] == ["sandbox"] and "sandbox.spawn" in found["actions"]


def test_a_worker_name_with_a_terminal_escape_is_shown_as_a_visible_escape(
    cli: Cli, tmp_path: Path, store_url: str
) -> None:
    tick(tmp_path, store_url, HOSTILE)
    table = cli(tmp_path, store_url, "runners")
    assert "<script>\\x1b[2J" in table and "\x1b" not in table
    (found,) = json.loads(cli(tmp_path, store_url, "runners", "--json"))
    assert found["worker"] == HOSTILE


@pytest.mark.slow
def test_a_runner_process_is_live_while_it_ticks_and_stopped_after_sigterm(
    cli: Cli, tmp_path: Path, store_url: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    env["RUNLEDGER_DATABASE_URL"] = store_url
    with (tmp_path / "runner.out").open("wb") as out:
        proc = subprocess.Popen(
            [*RUNLEDGER, "runner", "--interval", "0.1", "--worker", "proc"],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        with bootstrap(Settings(database_url=store_url), Registry()) as rl:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                rl.projector.catch_up()
                found = rl.fleet.listing(rl.clock())
                if found and found[0].state == "live":
                    break
                time.sleep(0.1)
            assert found and found[0].state == "live", (tmp_path / "runner.out").read_text()
            assert (found[0].worker, found[0].pid) == ("proc", proc.pid)
            assert rl.fleet.serving(rl.clock()).serves_module("sandbox")
        proc.send_signal(signal.SIGTERM)  # to this child's own pid
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    (listed,) = json.loads(cli(tmp_path, store_url, "runners", "--json"))
    assert (listed["worker"], listed["state"]) == ("proc", "stopped")
    assert listed["last_beat"] is not None

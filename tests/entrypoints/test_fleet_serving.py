"""Issue 9: a runner acts only for what it has loaded. Work a runner lacks is left to a live
runner that serves it; with none, it is a retry on the back-off, terminal only when the attempts
run out. Two runledgers on one store, each with its own modules, on one clock."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.step import Step
from tests.support.playing import GAME, Clock, phase, runledgers, spec, step
from tests.support.playing import GAME_SPAWN as SPAWN
from tests.support.reading import row, the_step, written
from tests.support.world import World

Open = Callable[..., Runledger]
SLOW = {"retry_delays_s": (5.0, 30.0), "retry_jitter": 0.0}


@pytest.fixture
def stores(store_url: str, clock: Clock) -> Iterator[tuple[World, Open, Open]]:
    """The game, and two openers on the test's store: one with the game's module, one bare."""
    game, with_game = World(name=GAME), Registry()
    game.install(with_game, SPAWN)
    with ExitStack() as stack:
        full = stack.enter_context(runledgers(store_url, with_game, clock))
        bare = stack.enter_context(runledgers(store_url, Registry(), clock))
        yield game, full, bare


def test_a_runner_missing_a_module_leaves_the_run_to_the_runner_that_has_it(
    stores: tuple[World, Open, Open],
) -> None:
    game, open_full, open_bare = stores
    full, bare = open_full(), open_bare()
    serving, lacking = full.runner("serving"), bare.runner("lacking")
    serving.join()
    lacking.join()
    run = full.runs.start(spec(phase("only", step("boss", SPAWN, count=2))))
    head = written(bare)
    lacking.tick()
    assert written(bare) == head  # nothing dispatched, nothing failed, nothing written
    full.runs.advance_leg("serving")  # dispatched; the run completes
    assert row(full, run).status == "completed" and len(game.alive) == 2
    head = written(bare)
    lacking.tick()
    assert written(bare) == head  # its cleanup leg leaves the game's entries alone too
    serving.tick()
    assert (row(full, run).cleanup_status, game.alive) == ("complete", {})


def test_runner_records_are_read_only_by_a_runner_that_lacks_something_a_run_needs(
    stores: tuple[World, Open, Open],
) -> None:
    _, open_full, open_bare = stores
    full, bare = open_full(), open_bare()
    reads: dict[str, int] = {"full": 0, "bare": 0}
    for name, rl in (("full", full), ("bare", bare)):
        serving = rl.fleet.serving

        def counted(now: Any, _read: Any = serving, _name: str = name) -> Any:
            reads[_name] += 1
            return _read(now)

        rl.fleet.serving = counted  # type: ignore[method-assign]
    full.runner("serving").join()
    run = full.runs.start(spec(phase("only", step("boss", SPAWN, count=2))))
    for _ in range(3):
        full.runner("serving").tick()
    assert (row(full, run).status, row(full, run).cleanup_status) == ("completed", "complete")
    assert reads["full"] == 0  # it has every module its runs need: nothing to ask
    bare.runner("lacking").tick()
    assert reads["bare"] == 0  # no run left that anybody owes: nothing to ask either
    full.runs.start(spec(phase("only", step("boss", SPAWN, count=1))))
    bare.runner("lacking").tick()
    assert reads["bare"] == 1  # a step it cannot dispatch: it asks who serves it, once a leg


def test_with_no_live_runner_serving_it_a_step_waits_its_back_off_and_a_returning_runner_ends_it(
    stores: tuple[World, Open, Open],
    clock: Clock,
) -> None:
    game, open_full, open_bare = stores
    full, bare = open_full(**SLOW), open_bare(**SLOW)
    lacking = bare.runner("lacking")
    lacking.join()
    run = full.runs.start(spec(phase("only", step("boss", SPAWN))))  # started, nobody serving
    lacking.tick()
    boss = the_step(bare, run, "boss")
    assert (boss.attempts, boss.last_error, boss.state) == (
        1,
        f"no live runner serves {SPAWN}",
        "waiting",
    )
    clock.advance(4.9)
    lacking.tick()
    assert the_step(bare, run, "boss").attempts == 1  # not before its time
    clock.advance(0.1)
    lacking.tick()
    assert the_step(bare, run, "boss").attempts == 2
    clock.advance(20)
    serving = full.runner("serving")
    serving.join()  # back within the schedule
    clock.advance(10)
    lacking.tick()
    assert the_step(bare, run, "boss").attempts == 2  # left to the runner that has it
    serving.tick()
    assert the_step(full, run, "boss").state == "done" and game.alive == {}
    assert (row(full, run).status, row(full, run).cleanup_status) == ("completed", "complete")


def test_with_no_live_runner_ever_serving_it_the_last_attempt_names_the_missing_action(
    stores: tuple[World, Open, Open],
    clock: Clock,
) -> None:
    _, open_full, open_bare = stores
    full, bare = open_full(**SLOW), open_bare(**SLOW)
    lacking = bare.runner("lacking")
    lacking.join()
    run = full.runs.start(spec(phase("only", step("boss", SPAWN))))
    for wait in (0, 5, 30):
        clock.advance(wait)
        lacking.tick()
    boss = the_step(bare, run, "boss")
    assert (boss.state, boss.attempts) == ("gave_up", 3)
    assert boss.last_error == f'no module registers "{SPAWN}"'
    found = row(bare, run)
    assert found.status == "aborted"
    assert found.end_reason == f'step boss failed 3 times: no module registers "{SPAWN}"'
    failures = [
        e for e in bare.app.events.get(Step.create_id(run, "boss")) if isinstance(e, Step.Failed)
    ]
    assert [f.next_attempt_at is not None for f in failures] == [True, True, False]


# --- the issue's own steps, through the CLI ----------------------------------------------------


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from runledger.application.cli.app import main; main()", *args],
        env={**os.environ, "COLUMNS": "300", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def events_in(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0])


@pytest.mark.slow
def test_a_tick_from_a_runner_whose_sandbox_failed_to_start_never_aborts_a_served_run(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    good = {
        "RUNLEDGER_DATABASE_URL": f"sqlite:///{ledger}",
        "EVENT_RETRY_DELAYS_S": "1",
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
    }
    broken = good | {"RUNLEDGER_SANDBOX_PATH": "/nonexistent/x.sqlite3"}
    init_store(Settings(database_url=good["RUNLEDGER_DATABASE_URL"]))
    document: dict[str, Any] = {
        "name": "crows",
        "phases": [
            {
                "id": "p",
                "steps": [
                    {
                        "id": "spawn",
                        "action": "sandbox.spawn",
                        "params": {"kind": "crow", "count": 2},
                    }
                ],
            }
        ],
    }
    (tmp_path / "spec.json").write_text(json.dumps(document))
    started = cli("start", str(tmp_path / "spec.json"), env=good)
    assert started.returncode == 0, started.stdout + started.stderr
    run_id = started.stdout.strip()
    assert "startup_failed" in cli("modules", env=broken).stdout
    # No live runner serves sandbox.spawn yet: a retry on the back-off, never an abort.
    assert cli("tick", "--worker", "broken", env=broken).returncode == 0
    shown = cli("log", run_id, env=good).stdout
    assert "no live runner serves sandbox.spawn" in shown and "aborted" not in shown
    runner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from runledger.application.cli.app import main; main()",
            "runner",
            "--interval",
            "0.2",
            "--worker",
            "serving",
        ],
        env={**os.environ, **good},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Read in-process while waiting: a CLI process a poll costs more than the wait.
        with bootstrap(Settings(database_url=good["RUNLEDGER_DATABASE_URL"]), Registry()) as rl:
            deadline = time.monotonic() + 60
            while row(rl, UUID(run_id)).cleanup_status != "complete":
                assert time.monotonic() < deadline, cli("log", run_id, env=good).stdout
                time.sleep(0.1)
        before = events_in(ledger)
        assert cli("tick", "--worker", "broken", env=broken).returncode == 0
        # A tick writes its runner's record (joined, then left): nothing else.
        assert events_in(ledger) - before == 2
    finally:
        runner.terminate()
        runner.wait(timeout=20)
    shown = cli("log", run_id, env=good).stdout
    assert " UTC step done " in shown and " UTC given back " in shown, shown

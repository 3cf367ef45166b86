"""The sandbox world's fault knobs, end to end through the runner, on SQLite and PostgreSQL.

Every test loads the real sandbox module through bootstrap (no registry is passed), breaks the
world the way a test or a person would, and drives the run with the runner's tick.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from rich.console import Console

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.cli.console import show_runs
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.queries import EntryRow, RunRow
from tests.support.playing import NO_BACKOFF

SPAWN = "sandbox.spawn"
ZONE = "sandbox.zone"
WEATHER = "sandbox.weather"

Open = Callable[..., Runledger]


@pytest.fixture
def sandbox_path(tmp_path: Path) -> Path:
    return tmp_path / "sandbox.sqlite3"


@pytest.fixture
def world(sandbox_path: Path) -> SandboxWorld:
    return SandboxWorld(sandbox_path)


@pytest.fixture
def open_rl(store_url: str, sandbox_path: Path) -> Iterator[Open]:
    """Bootstrap with the built-in sandbox module on the test's own world file."""
    opened: list[Runledger] = []

    def make(**module_settings: str) -> Runledger:
        settings = Settings(
            database_url=store_url,
            builtin_modules="sandbox",
            module_settings={"RUNLEDGER_SANDBOX_PATH": str(sandbox_path), **module_settings},
            **NO_BACKOFF,
        )
        rl = bootstrap(settings)
        opened.append(rl)
        return rl

    yield make
    for rl in opened:
        rl.close()


@pytest.fixture
def rl(open_rl: Open) -> Runledger:
    return open_rl()


def spec(*steps: dict[str, Any], advance: str = "auto") -> dict[str, Any]:
    return {
        "name": "sandbox run",
        "phases": [{"id": "p1", "advance": advance, "steps": list(steps)}],
    }


def spawn(count: int = 2, step: str = "s1") -> dict[str, Any]:
    return {"id": step, "action": SPAWN, "params": {"count": count}}


def key(run: UUID, step: str = "s1") -> str:
    return f"{run}:{step}"


def ticks(rl: Runledger, n: int = 1) -> None:
    runner = rl.runner("w1")
    for _ in range(n):
        runner.tick()


def started_and_held(rl: Runledger, *steps: dict[str, Any]) -> UUID:
    """A run whose steps are dispatched and whose phase waits for a person: still running."""
    run = rl.runs.start(spec(*steps, advance="manual"))
    ticks(rl)
    return run


def ended(rl: Runledger, run: UUID) -> None:
    rl.runs.advance(run, "tester")


def run_row(rl: Runledger, run: UUID) -> RunRow:
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert row is not None
    return row


def named(rl: Runledger, run: UUID) -> dict[str, EntryRow]:
    rl.projector.catch_up()
    return {e.ref: e for e in rl.queries.entries(run) if e.kind != "@step"}


def wait_until(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


# --- retries: fail_revert, terminal, hang, throw, garbage ----------------------------------------


def test_a_revert_that_fails_twice_is_retried_and_then_given_back(
    rl: Runledger, world: SandboxWorld
) -> None:
    world.set_fault(SPAWN, "fail_revert", 2)
    run = rl.runs.start(spec(spawn(2)))
    ticks(rl, 3)
    entries = named(rl, run)
    assert {e.status for e in entries.values()} == {"reverted"}
    assert {e.attempts for e in entries.values()} == {3}
    assert run_row(rl, run).cleanup_status == "complete"
    assert world.things() == {}
    assert world.calls(f"revert:{SPAWN}") == {key(run): 3}


def test_a_revert_that_keeps_failing_leaves_the_run_incomplete_after_three_attempts(
    rl: Runledger, world: SandboxWorld
) -> None:
    world.set_fault(SPAWN, "fail_revert", 10)
    run = rl.runs.start(spec(spawn(2)))
    ticks(rl, 5)
    entries = named(rl, run)
    assert {(e.status, e.attempts, e.terminal) for e in entries.values()} == {("failing", 3, False)}
    assert {e.last_error for e in entries.values()} == {
        f"sandbox: {SPAWN} could not reach the shard"
    }
    assert run_row(rl, run).cleanup_status == "incomplete"
    assert set(world.things()) == set(entries)
    assert world.calls(f"revert:{SPAWN}") == {key(run): 3}


def test_a_terminal_refusal_is_not_retried_and_keeps_its_real_attempt_count(
    rl: Runledger, world: SandboxWorld
) -> None:
    world.set_fault(SPAWN, "terminal")
    run = rl.runs.start(spec(spawn(1)))
    ticks(rl, 4)
    (entry,) = named(rl, run).values()
    assert (entry.status, entry.attempts, entry.terminal) == ("failing", 1, True)
    assert entry.last_error == f"sandbox: {SPAWN} refuses (injected)"
    assert run_row(rl, run).cleanup_status == "incomplete"
    assert world.calls(f"revert:{SPAWN}") == {key(run): 1}


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_the_console_says_a_terminal_refusal_was_tried_once_and_is_not_retried(
    rl: Runledger, world: SandboxWorld
) -> None:
    world.set_fault(SPAWN, "terminal")
    run = rl.runs.start(spec(spawn(1)))
    ticks(rl, 2)
    screen = Console(record=True, width=300)
    show_runs(screen, rl.answers, [run], with_log=True)
    (left,) = [line for line in screen.export_text().splitlines() if "left:" in line]
    assert f"1 attempt — not retried: sandbox: {SPAWN} refuses (injected)" in left


@pytest.fixture
def slow_rl(open_rl: Open) -> Runledger:
    return open_rl(RUNLEDGER_SANDBOX_BUDGET_MS="200")


def test_a_revert_that_hangs_past_the_budget_is_retried(
    slow_rl: Runledger, world: SandboxWorld
) -> None:
    run = started_and_held(slow_rl, spawn(1))
    world.set_fault(SPAWN, "hang", 1)
    ended(slow_rl, run)
    began = time.monotonic()
    ticks(slow_rl)
    assert time.monotonic() - began < 0.9  # the tick did not wait for the hung call
    (entry,) = named(slow_rl, run).values()
    assert (entry.status, entry.attempts, entry.terminal) == ("failing", 1, False)
    assert entry.last_error == f"{SPAWN} did not answer within 0.2s"
    assert run_row(slow_rl, run).cleanup_status == "pending"
    world.clear_faults()
    ticks(slow_rl)
    (entry,) = named(slow_rl, run).values()
    assert (entry.status, entry.attempts) == ("reverted", 2)
    assert run_row(slow_rl, run).cleanup_status == "complete"


@pytest.mark.parametrize(
    ("knob", "error"),
    [
        (
            "throw",
            f"{SPAWN} raised RuntimeError: sandbox: the shard dropped the connection (injected)",
        ),
        ("garbage", f'{SPAWN} answered "garbage", which is not a revert answer'),
    ],
    ids=["throw", "garbage"],
)
def test_a_revert_that_throws_or_answers_garbage_is_retried_never_read_as_success(
    rl: Runledger, world: SandboxWorld, knob: str, error: str
) -> None:
    run = started_and_held(rl, spawn(1))
    world.set_fault(SPAWN, knob)
    ended(rl, run)
    ticks(rl)
    (entry,) = named(rl, run).values()
    assert (entry.status, entry.attempts, entry.terminal) == ("failing", 1, False)
    assert entry.last_error == error
    assert len(world.things()) == 1
    world.clear_faults()
    ticks(rl)
    (entry,) = named(rl, run).values()
    assert (entry.status, entry.attempts) == ("reverted", 2)
    assert world.things() == {}
    assert run_row(rl, run).cleanup_status == "complete"


def test_refs_a_group_fails_are_failing_and_the_rest_of_the_group_is_given_back(
    rl: Runledger, world: SandboxWorld
) -> None:
    run = started_and_held(rl, spawn(3))
    stuck = sorted(world.things())[1]
    world.set_fault(SPAWN, "fail_refs", [stuck])
    ended(rl, run)
    ticks(rl, 4)
    entries = named(rl, run)
    assert {r: (e.status, e.attempts) for r, e in entries.items()} == {
        r: ("failing", 3) if r == stuck else ("reverted", 1) for r in entries
    }
    assert entries[stuck].last_error == f'{SPAWN} could not give "{stuck}" back'
    assert set(world.things()) == {stuck}
    assert run_row(rl, run).cleanup_status == "incomplete"


def test_a_failed_perform_is_retried_with_the_same_key_and_makes_one_set_of_things(
    rl: Runledger, world: SandboxWorld
) -> None:
    world.set_fault(SPAWN, "fail_perform", 1)
    run = rl.runs.start(spec(spawn(2)))
    ticks(rl, 2)
    assert world.calls(f"perform:{SPAWN}") == {key(run): 2}
    entries = named(rl, run)
    assert len(entries) == 2 and {e.status for e in entries.values()} == {"reverted"}
    assert world.things() == {}
    assert run_row(rl, run).cleanup_status == "complete"


# --- somebody else's value, things that vanish, the world's own deadline -------------------------


def lease(target: str, value: Any, duration_s: float = 600) -> dict[str, Any]:
    return {
        "id": f"lease-{target}",
        "action": "core.lease",
        "params": {"lease": WEATHER, "target": target, "value": value, "duration_s": duration_s},
    }


def test_a_lease_changed_by_somebody_else_is_drifted_and_their_value_stays(
    rl: Runledger, world: SandboxWorld
) -> None:
    run = started_and_held(rl, lease("north", "storm"))
    assert world.value("weather:north") == "storm"
    world.set_value("weather:north", "snow")
    ended(rl, run)
    ticks(rl, 3)
    (entry,) = named(rl, run).values()
    assert (entry.status, entry.attempts, entry.drift_current) == ("drifted", 1, "snow")
    assert world.value("weather:north") == "snow"
    assert world.calls(f"restore:{WEATHER}") == {"north": 1}
    assert run_row(rl, run).cleanup_status == "incomplete"


def test_a_restore_repeated_after_its_runner_died_finds_the_baseline_and_has_given_it_back(
    rl: Runledger, world: SandboxWorld
) -> None:
    run = started_and_held(rl, lease("north", "storm"))
    # The first restore put "clear" back; its runner died before the verdict was saved.
    lease_key = key(run, "lease-north")
    assert world.restore(WEATHER, "clear", "storm", "north", lease_key) == {"ok": True}
    assert world.restore(WEATHER, "clear", "storm", "north", lease_key) == {"ok": True}
    ended(rl, run)
    ticks(rl, 2)
    (entry,) = named(rl, run).values()
    assert (entry.status, entry.attempts) == ("reverted", 1)
    assert world.value("weather:north") == "clear"
    assert run_row(rl, run).cleanup_status == "complete"


def test_a_thing_that_vanished_is_orphaned_by_a_reconcile_and_the_rest_stays_live(
    rl: Runledger, world: SandboxWorld
) -> None:
    run = started_and_held(rl, spawn(2))
    gone, kept = sorted(world.things())
    assert world.vanish(gone)
    summary = rl.reconciler.reconcile_module("sandbox")
    assert (summary.asked, summary.in_force, summary.orphaned) == (2, 1, 1)
    entries = named(rl, run)
    assert (entries[gone].status, entries[kept].status) == ("orphaned", "live")
    ended(rl, run)
    ticks(rl)
    assert {e.status for e in named(rl, run).values()} == {"reverted"}
    assert run_row(rl, run).cleanup_status == "complete"


def test_a_zone_the_world_ends_at_its_deadline_reaches_the_ledger_as_expired(
    rl: Runledger, world: SandboxWorld
) -> None:
    zone = {"id": "z", "action": ZONE, "params": {"name": "fair", "duration_s": 0.5}}
    run = started_and_held(rl, zone)
    assert set(world.things()) == {"fair"}
    assert wait_until(lambda: named(rl, run)["fair"].status == "expired")
    assert world.things() == {}
    assert [line.kind for line in rl.queries.log(run)].count("resource.expired") == 1
    ended(rl, run)
    ticks(rl, 2)
    assert run_row(rl, run).cleanup_status == "complete"
    assert world.calls(f"revert:{ZONE}") == {}


def test_a_restart_makes_the_module_reconcile_on_its_own(
    rl: Runledger, world: SandboxWorld
) -> None:
    run = started_and_held(rl, spawn(2))
    gone, kept = sorted(world.things())
    world.vanish(gone)
    time.sleep(0.5)
    assert named(rl, run)[gone].status == "live"  # nobody has asked yet
    world.restart()
    assert wait_until(lambda: named(rl, run)[gone].status == "orphaned")
    assert named(rl, run)[kept].status == "live"
    assert "resource.orphaned" in [line.kind for line in rl.queries.log(run)]


# --- never twice ----------------------------------------------------------------------------------


def test_every_key_is_performed_once_and_given_back_once(
    rl: Runledger, world: SandboxWorld
) -> None:
    run = rl.runs.start(
        {
            "name": "festival",
            "phases": [
                {"id": "p1", "steps": [spawn(2, "crows"), lease("south", "rain")]},
                {
                    "id": "p2",
                    "steps": [
                        spawn(1, "king"),
                        {"id": "z", "action": ZONE, "params": {"name": "market"}},
                    ],
                },
            ],
        }
    )
    ticks(rl, 5)
    assert run_row(rl, run).cleanup_status == "complete"
    assert world.calls(f"perform:{SPAWN}") == {key(run, "crows"): 1, key(run, "king"): 1}
    assert world.calls(f"perform:{ZONE}") == {key(run, "z"): 1}
    assert world.calls(f"revert:{SPAWN}") == {key(run, "crows"): 1, key(run, "king"): 1}
    assert world.calls(f"revert:{ZONE}") == {key(run, "z"): 1}
    assert world.calls(f"restore:{WEATHER}") == {"south": 1}
    assert world.things() == {}
    assert world.value("weather:south") == "clear"


# --- the world itself: keys given back are ended, applies are keyed ------------------------------


def given_back(key: str, what: str = "made") -> dict[str, Any]:
    return {
        "ok": False,
        "retry": False,
        "error": f"{key} was given back; nothing is {what} under it",
    }


def test_a_perform_hanging_while_its_key_is_given_back_makes_nothing_when_it_wakes(
    world: SandboxWorld,
) -> None:
    world.set_fault(SPAWN, "hang", 0.6)
    answers: list[Any] = []
    late = threading.Thread(
        target=lambda: answers.append(world.perform(SPAWN, {"count": 2}, "late-key"))
    )
    late.start()
    assert wait_until(lambda: world.calls(f"perform:{SPAWN}") == {"late-key": 1}, 2.0)
    world.clear_faults()
    assert world.revert(SPAWN, [], "late-key") == {"ok": True}  # nothing there yet
    assert late.is_alive()  # the perform is still asleep in its thread
    late.join(5)
    assert answers == [given_back("late-key")]
    assert world.things() == {}
    assert world.fenced("late-key")


def test_a_perform_after_its_key_was_given_back_makes_nothing_and_a_repeat_makes_nothing_new(
    world: SandboxWorld,
) -> None:
    first = world.perform(SPAWN, {"count": 2}, "k1")
    assert world.perform(SPAWN, {"count": 2}, "k1") == first
    assert len(world.things()) == 2
    assert world.revert(SPAWN, [], "k1") == {"ok": True}
    assert world.things() == {}
    assert world.perform(SPAWN, {"count": 2}, "k1") == given_back("k1")
    assert world.perform(ZONE, {"name": "fair"}, "k1") == given_back("k1")
    assert world.things() == {}


def test_a_revert_of_listed_things_ends_its_key_too(world: SandboxWorld) -> None:
    made = world.perform(SPAWN, {"count": 1}, "k1")["resources"]
    assert world.revert(SPAWN, made, "k1") == {"ok": True}
    assert world.fenced("k1") and not world.fenced("k2")
    assert world.perform(SPAWN, {"count": 1}, "k1") == given_back("k1")


def test_a_repeated_apply_answers_the_first_baseline_and_changes_nothing(
    world: SandboxWorld,
) -> None:
    first = world.apply(WEATHER, "north", "storm", "lease-k")
    assert first == {"ok": True, "baseline": "clear", "applied": "storm"}
    assert world.apply(WEATHER, "north", "hail", "lease-k") == first
    assert world.value("weather:north") == "storm"
    assert world.applied_under("lease-k") == {
        "target": "weather:north",
        "baseline": "clear",
        "applied": "storm",
    }
    assert world.calls(f"apply:{WEATHER}") == {"lease-k": 2}


def test_a_restore_by_key_with_no_baseline_puts_back_what_the_key_found_and_ends_it(
    world: SandboxWorld,
) -> None:
    world.set_value("weather:north", "fog")
    world.apply(WEATHER, "north", "storm", "lease-k")
    world.apply(WEATHER, "north", "storm", "lease-k")  # a retry: its baseline would be storm
    assert world.restore(WEATHER, None, None, "north", "lease-k") == {"ok": True}
    assert world.value("weather:north") == "fog"
    assert world.fenced("lease-k")
    assert world.apply(WEATHER, "north", "storm", "lease-k") == given_back("lease-k", "applied")
    assert world.value("weather:north") == "fog"
    assert world.restore(WEATHER, None, None, "north", "lease-k") == {"ok": True}  # restored


def test_what_the_world_recorded_under_a_key_wins_over_the_baseline_core_sends(
    world: SandboxWorld,
) -> None:
    world.apply(WEATHER, "north", "storm", "lease-k")
    assert world.restore(WEATHER, "storm", "storm", "north", "lease-k") == {"ok": True}
    assert world.value("weather:north") == "clear"


def test_a_restore_under_a_key_that_applied_nothing_is_ok_and_ends_the_key(
    world: SandboxWorld,
) -> None:
    world.set_value("weather:north", "fog")
    assert world.restore(WEATHER, None, None, "north", "never-applied") == {"ok": True}
    assert world.value("weather:north") == "fog"
    assert world.apply(WEATHER, "north", "storm", "never-applied") == given_back(
        "never-applied", "applied"
    )
    assert world.value("weather:north") == "fog"
    assert world.applied_under("never-applied") is None


def test_a_restore_by_key_leaves_somebody_elses_value_and_says_it_drifted(
    world: SandboxWorld,
) -> None:
    world.apply(WEATHER, "north", "storm", "lease-k")
    world.set_value("weather:north", "snow")
    assert world.restore(WEATHER, None, None, "north", "lease-k") == {
        "drifted": True,
        "current": "snow",
    }
    assert world.value("weather:north") == "snow"
    assert world.fenced("lease-k")


# --- the knobs from the command line --------------------------------------------------------------


def sandbox_cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    environ.update(RUNLEDGER_SANDBOX_PATH=str(path), COLUMNS="200")
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from runledger.application.cli.app import main; main()",
            "sandbox",
            *args,
        ],
        cwd=path.parent,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_faults_set_from_the_command_line_reach_the_running_module(
    rl: Runledger, world: SandboxWorld, sandbox_path: Path
) -> None:
    run = started_and_held(rl, spawn(2))
    gone, kept = sorted(world.things())
    done = sandbox_cli(sandbox_path, "fault", SPAWN, "terminal")
    assert done.returncode == 0, done.stderr
    refused = sandbox_cli(sandbox_path, "fault", SPAWN, "explode")
    assert refused.returncode == 2 and "unknown fault 'explode'" in refused.stdout
    assert sandbox_cli(sandbox_path, "vanish", gone).stdout.strip() == "gone"
    assert sandbox_cli(sandbox_path, "restart").returncode == 0
    assert wait_until(lambda: named(rl, run)[gone].status == "orphaned")
    assert sandbox_cli(sandbox_path, "set", "weather:north", "hail").returncode == 0
    shown = sandbox_cli(sandbox_path, "show").stdout
    assert kept in shown and gone not in shown and "weather:north = hail" in shown
    ended(rl, run)
    ticks(rl, 2)
    assert {(e.status, e.attempts, e.terminal) for e in named(rl, run).values()} == {
        ("failing", 1, True)
    }

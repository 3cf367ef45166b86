"""Leases applied and restored by key, on an SQLite file and on PostgreSQL, checked against the
sandbox world's own tables (its ``props``, its ``calls`` counts), not only the ledger.

Issue 26's second and third causes: an apply that takes effect but answers after core's bound
must not let the retry read the run's own override as its baseline; and a lease placeholder
left by a runner that died while its apply was answering is given back by asking the module,
which puts back what the key found.

The lease is the built-in sandbox's ``sandbox.weather``; its ``hang`` fault holds an apply's
answer back after the value is set, as a slow shard's answer would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.deadline import ABANDONED
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
LEASE = "sandbox.weather"
TARGET = "north"
PROP = f"weather:{TARGET}"


@pytest.fixture
def sky(tmp_path: Path) -> SandboxWorld:
    return SandboxWorld(tmp_path / "sandbox.sqlite3")


def environment(store_url: str, sky: SandboxWorld) -> dict[str, str]:
    return {
        "RUNLEDGER_DATABASE_URL": store_url,
        "RUNLEDGER_BUILTIN_MODULES": "sandbox",
        "RUNLEDGER_SANDBOX_PATH": str(sky.path),
        "EVENT_RETRY_DELAYS_S": "0",
    }


Open = Callable[..., Runledger]


@pytest.fixture
def open_rl(store_url: str, sky: SandboxWorld) -> Iterator[Open]:
    opened: list[Runledger] = []

    def make(**settings: Any) -> Runledger:
        given = Settings.from_env(environment(store_url, sky)).model_copy(update=settings)
        rl = bootstrap(given)
        opened.append(rl)
        return rl

    yield make
    assert ABANDONED.wait(30) == []
    for rl in opened:
        rl.close()


def leasing(value: str = "fog") -> dict[str, Any]:
    step = {
        "id": "sky",
        "action": "core.lease",
        "params": {"lease": LEASE, "target": TARGET, "value": value, "duration_s": 3600},
    }
    return {"name": "fog", "phases": [{"id": "p1", "advance": "manual", "steps": [step]}]}


def status(rl: Runledger, run: UUID) -> str:
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert row is not None
    return row.cleanup_status


def give_back(rl: Runledger, run: UUID) -> str:
    rl.cleanup.sweep("w1")
    return status(rl, run)


def test_a_repeated_apply_never_takes_the_runs_own_override_as_its_baseline(
    open_rl: Open, sky: SandboxWorld
) -> None:
    sky.set_value(PROP, "original")
    sky.set_fault(LEASE, "hang", 1.5)
    rl = open_rl(default_budget_ms=300)  # core.lease's bound on apply
    run = rl.runs.start(leasing("OPEN"))
    rl.runs.advance_leg("w1")  # the apply takes effect, and answers after the bound
    assert sky.value(PROP) == "OPEN"
    sky.clear_faults()
    assert ABANDONED.wait(30) == []
    for _ in range(3):  # the retry applies again under the same key, if it must
        rl.runs.advance_leg("w1")
    key = f"{run}:sky"
    rl.projector.catch_up()
    lease = [e for e in rl.queries.entries(run) if e.kind == "override"]
    assert [e.payload for e in lease] == [{"baseline": "original", "applied": "OPEN"}]
    rl.ledger.cancel_run(run, "ops", cleanup=True)
    assert give_back(rl, run) == "complete"
    assert sky.value(PROP) == "original"  # the world, not only the ledger
    assert sky.calls("apply:sandbox.weather").get(key, 0) >= 1


def test_a_lease_placeholder_left_by_a_dead_runner_is_restored_by_asking_the_module(
    open_rl: Open, store_url: str, sky: SandboxWorld
) -> None:
    sky.set_value(PROP, "clear")
    rl = open_rl()
    run = rl.runs.start(leasing("fog"))
    sky.set_fault(LEASE, "hang", 120)
    env = os.environ | environment(store_url, sky)
    victim = subprocess.Popen(
        [sys.executable, "-m", "runledger.application.cli.app", "runner", "--interval", "0.1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while sky.value(PROP) != "fog":  # the apply took effect; its answer is on its way
            assert victim.poll() is None, "the runner ended by itself"
            assert time.monotonic() < deadline, "the runner never applied the lease"
            time.sleep(0.05)
    finally:
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(30)
    sky.clear_faults()
    rl.ledger.cancel_run(run, "ops", cleanup=True)
    assert give_back(rl, run) == "complete"  # a new runner's sweep
    assert sky.value(PROP) == "clear"  # put back by the module's record of the key
    assert sky.calls("restore:sandbox.weather") == {TARGET: 1}
    # The key is ended: an apply under it arriving now (a late thread) changes nothing.
    assert sky.apply("sandbox.weather", TARGET, "fog", f"{run}:sky")["ok"] is False
    assert sky.value(PROP) == "clear"

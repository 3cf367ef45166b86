"""Late answers count: a call abandoned at its deadline that answers after all, on an SQLite file
and on PostgreSQL, checked against the world itself (the sandbox's own tables, the World's own
state), not only the ledger.

Issue 26's first cause: a perform hangs past its budget, the run ends, its placeholder is given
back by key while nothing is there yet, then the abandoned call makes its creatures. A fencing
module (the sandbox) makes nothing under a key given back; a module that does not fence has
what its late answer names ledgered on the ended run and given back by the sweep.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.deadline import ABANDONED
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from runledger.projections.queries import EntryRow
from tests.support.playing import GAME, Clock, phase, runledgers, spec, step
from tests.support.reading import the_step
from tests.support.world import World

SPAWN = "game.spawn"
LATE_S = 1.5
"""How long a hanging call takes: well past its budget, short enough for a test to wait for."""
SLOW: dict[str, Any] = {"retry_delays_s": (600.0,)}
"""The step's retry waits far beyond the test: only the late answer can change the world."""


def abandoned_calls_end() -> None:
    assert ABANDONED.wait(30) == [], "an abandoned call did not end"


def settle(rl: Runledger, run: UUID) -> str:
    rl.cleanup.sweep("w1")
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert row is not None
    return row.cleanup_status


def entries(rl: Runledger, run: UUID) -> list[EntryRow]:
    rl.projector.catch_up()
    return rl.queries.entries(run)


def log_kinds(rl: Runledger, run: UUID) -> list[str]:
    rl.projector.catch_up()
    return [line.kind for line in rl.queries.log(run, limit=100)]


# --- a module that fences: the sandbox ---------------------------------------------------------


@pytest.fixture
def sandbox(tmp_path: Path) -> SandboxWorld:
    return SandboxWorld(tmp_path / "sandbox.sqlite3")


@pytest.fixture
def sandboxed(store_url: str, sandbox: SandboxWorld) -> Iterator[Runledger]:
    """The real sandbox module through bootstrap, with a budget the hang overruns."""
    settings = Settings(
        database_url=store_url,
        builtin_modules="sandbox",
        module_settings={
            "RUNLEDGER_SANDBOX_PATH": str(sandbox.path),
            "RUNLEDGER_SANDBOX_BUDGET_MS": "300",
        },
        **SLOW,
    )
    with bootstrap(settings) as rl:
        yield rl
        abandoned_calls_end()


def spawning(count: int = 2) -> dict[str, Any]:
    return {
        "name": "crows",
        "phases": [
            {
                "id": "p1",
                "advance": "manual",
                "steps": [{"id": "s1", "action": "sandbox.spawn", "params": {"count": count}}],
            }
        ],
    }


def test_a_perform_that_answers_after_its_run_was_given_back_makes_nothing(
    sandboxed: Runledger, sandbox: SandboxWorld
) -> None:
    sandbox.set_fault("sandbox.spawn", "hang", LATE_S)
    run = sandboxed.runs.start(spawning())
    sandboxed.runs.advance_leg("w1")  # the perform is abandoned at 0.3 s and keeps on
    sandbox.clear_faults()  # what hangs now is the perform alone, as in the drill
    sandboxed.ledger.cancel_run(run, "ops", cleanup=True)
    assert settle(sandboxed, run) == "complete"  # the placeholder, given back by its key
    abandoned_calls_end()
    key = f"{run}:s1"
    assert [t for t in sandbox.things().values() if t["key"] == key] == []
    assert sandbox.calls("perform:sandbox.spawn") == {key: 1}
    assert settle(sandboxed, run) == "complete"


def test_a_perform_that_answers_late_while_its_run_goes_on_is_ledgered_and_given_back(
    sandboxed: Runledger, sandbox: SandboxWorld
) -> None:
    sandbox.set_fault("sandbox.spawn", "hang", LATE_S)
    run = sandboxed.runs.start(spawning(count=3))
    sandboxed.runs.advance_leg("w1")
    abandoned_calls_end()
    sandbox.clear_faults()
    key = f"{run}:s1"
    made = sorted(ref for ref, t in sandbox.things().items() if t["key"] == key)
    assert len(made) == 3
    assert sorted(e.ref for e in entries(sandboxed, run) if e.status == "live") == made
    assert "step.answered_late" in log_kinds(sandboxed, run)
    sandboxed.ledger.cancel_run(run, "ops", cleanup=True)
    assert settle(sandboxed, run) == "complete"
    assert sandbox.things() == {}


# --- a module that does not fence: the World ------------------------------------------------------


@pytest.fixture
def slow_game(registry: Registry) -> World:
    """The World, whose spawn has a budget of 0.3 s; its next perform makes its things late."""
    game = World(name=GAME)
    game.install(registry, SPAWN, budget_ms=300)

    def late(params: dict[str, Any], key: str) -> Any:
        time.sleep(LATE_S)
        return game.make(params, key)

    game.script("perform", SPAWN, late)
    return game


@pytest.fixture
def game_rl(
    store_url: str, registry: Registry, clock: Clock, slow_game: World
) -> Iterator[Runledger]:
    with runledgers(store_url, registry, clock) as open_one:
        yield open_one(**SLOW)
        abandoned_calls_end()


def one_step(count: int = 2) -> dict[str, Any]:
    return spec(phase("p1", step("s1", SPAWN, count=count), advance="manual"))


def test_what_a_late_answer_names_after_its_run_ended_is_ledgered_on_that_run_and_given_back(
    game_rl: Runledger, slow_game: World
) -> None:
    run = game_rl.runs.start(one_step())
    game_rl.runs.advance_leg("w1")
    game_rl.ledger.cancel_run(run, "ops", cleanup=True)
    assert settle(game_rl, run) == "complete"  # nothing was there yet
    abandoned_calls_end()
    key = f"{run}:s1"
    assert sorted(slow_game.alive) == [f"{key}/0", f"{key}/1"]  # the world: two things live
    named = [e for e in entries(game_rl, run) if e.kind == "creature"]
    assert sorted(e.ref for e in named) == sorted(slow_game.alive)
    assert "step.answered_late" in log_kinds(game_rl, run)
    assert settle(game_rl, run) == "complete"
    assert slow_game.alive == {}
    assert [e.status for e in entries(game_rl, run) if e.kind == "creature"] == ["reverted"] * 2


def test_a_late_answer_and_the_steps_retry_under_one_key_ledger_each_thing_once(
    game_rl: Runledger, slow_game: World, clock: Clock
) -> None:
    run = game_rl.runs.start(one_step())
    game_rl.runs.advance_leg("w1")
    abandoned_calls_end()
    assert the_step(game_rl, run, "s1").state == "waiting"
    clock.advance(1000)  # past the retry delay and its jitter
    game_rl.runs.advance_leg("w1")  # the retry answers the same things under the same key
    assert the_step(game_rl, run, "s1").state == "done"
    named = [e for e in entries(game_rl, run) if e.kind == "creature"]
    assert sorted(e.ref for e in named) == sorted(slow_game.alive)
    assert len(named) == 2
    assert slow_game.keys_performed(SPAWN) == [f"{run}:s1"] * 2


def test_a_stopping_runner_waits_for_abandoned_calls_then_names_those_it_left(
    game_rl: Runledger, caplog: pytest.LogCaptureFixture
) -> None:
    game_rl.runs.start(one_step())
    game_rl.runs.advance_leg("w1")
    hurried = game_rl.runner("w1")
    hurried.settings = game_rl.settings.model_copy(update={"shutdown_grace_s": 0.1})
    with caplog.at_level(logging.WARNING, logger="runledger.runner"):
        hurried._await_abandoned()
    assert "1 call(s) abandoned" in caplog.text
    assert f"{SPAWN} for " in caplog.text
    caplog.clear()
    patient = game_rl.runner("w2")  # the default grace outlasts the call
    with caplog.at_level(logging.WARNING, logger="runledger.runner"):
        patient._await_abandoned()
    assert [r for r in caplog.records if r.name == "runledger.runner"] == []


def test_core_never_dispatches_a_key_whose_placeholder_was_given_back(
    store_url: str, registry: Registry, clock: Clock
) -> None:
    game = World(name=GAME)
    game.install(registry, SPAWN)
    game.script("perform", SPAWN, lambda params, key: {"ok": False, "error": "the shard is busy"})
    with runledgers(store_url, registry, clock) as open_one:
        rl = open_one()
        run = rl.runs.start(one_step())
        rl.runs.advance_leg("w1")  # the first attempt fails; its placeholder stands
        [held] = [e for e in entries(rl, run) if e.kind == "@step"]
        placeholder = rl.runs.streams.load(Resource, [held.entry_id])[held.entry_id]
        now = clock()
        placeholder.claim_revert("w2", now, now + timedelta(seconds=10), 3)
        placeholder.mark_reverted("w2", 1, now)
        rl.app.save(placeholder)  # given back by key, as a sweep racing the run would
        clock.advance(60)
        rl.runs.advance_leg("w1")
        assert game.keys_performed(SPAWN) == [f"{run}:s1"]  # the first attempt only
        assert game.alive == {}

"""A start checks what a dry run checks (SPEC "Runs, steps and dispatch"), on an SQLite file and
on PostgreSQL: params the action's model refuses, a manual phase with after_s and a lease target
another live run holds now are refused by the API (409: the request is well formed and the
loaded modules refuse it; the problem names the field) and the CLI (exit 1), with nothing
written; an action only another live runner serves stays startable; a due
occurrence whose target is held waits for the hold to end, and past HELD_WAIT starts as a run
aborted before its first step, saying who holds what."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.dry_run import StartRefused
from runledger.application.services.running.starts import HELD_WAIT
from runledger.application.settings import Settings
from runledger.domain.occurrence import run_id_for
from tests.entrypoints.test_cli_json import Cli, cli_fixture
from tests.support.api_support import Api, serving
from tests.support.definitions_support import (
    LIGHTS,
    Fair,
    fair_fixture,
    fair_rl_fixture,
    fair_spec,
    lights,
    schedule,
    stall,
    verified_and_published,
)
from tests.support.definitions_support import phase as fair_phase
from tests.support.playing import GAME, Clock, phase, runledgers, spec, step
from tests.support.playing import GAME_SPAWN as SPAWN
from tests.support.reading import row, tick, written
from tests.support.world import World

__all__ = ["cli_fixture", "fair_fixture", "fair_rl_fixture"]

WEATHER = "sandbox.weather"


def sandbox_spawn(**params: Any) -> dict[str, Any]:
    return spec(phase("p1", step("spawn", "sandbox.spawn", **params)), name="fair")


def north(name: str = "storm") -> dict[str, Any]:
    """A run that holds the north's weather for ten minutes."""
    lease = {"lease": WEATHER, "target": "north", "value": name, "duration_s": 600}
    return spec(phase("p1", step("sky", "core.lease", **lease), advance="manual"), name=name)


def manual_waiting() -> dict[str, Any]:
    document = sandbox_spawn(count=1)
    document["phases"][0] |= {"advance": "manual", "after_s": 30}
    return document


REFUSED: list[tuple[str, Callable[[], dict[str, Any]], list[Any], str]] = [
    (
        "count four",
        lambda: sandbox_spawn(count="four"),
        ["body", "phases", 0, "steps", 0, "params", "count"],
        "phases.0.steps.0.params.count: ",
    ),
    (
        "manual after_s",
        manual_waiting,
        ["body", "phases", 0, "after_s"],
        "phases.0.after_s: a manual phase waits for a person, not 30s",
    ),
    (
        "held target",
        lambda: north("fog"),
        ["body", "phases", 0, "steps", 0, "params", "target"],
        f"phases.0.steps.0.params.target: 'north' ({WEATHER}) is held by run ",
    ),
]


@pytest.fixture
def sandboxed(store_url: str, tmp_path: Path) -> Iterator[Api]:
    """The app over a runledger that loaded the built-in sandbox, as `serve` does."""
    settings = Settings.model_validate(
        {
            "database_url": store_url,
            "builtin_modules": "sandbox",
            "module_settings": {"RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3")},
        }
    )
    with bootstrap(settings) as rl:
        served = serving(rl)
        with served.client:
            yield served


def run_ids(rl: Runledger) -> list[UUID]:
    rl.projector.catch_up()
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT run_id FROM {rl_runs} ORDER BY run_id"))
        return [UUID(r["run_id"]) for r in cursor.fetchall()]


@pytest.mark.parametrize(("case", "document", "loc", "said"), REFUSED, ids=[c[0] for c in REFUSED])
def test_the_api_refuses_a_start_its_dry_run_would_naming_the_field_and_writes_nothing(
    sandboxed: Api,
    tmp_path: Path,
    case: str,
    document: Callable[[], dict[str, Any]],
    loc: list[Any],
    said: str,
) -> None:
    rl = sandboxed.rl
    holder = sandboxed.start(north())
    tick(rl)  # the holder takes the north's weather
    assert SandboxWorld(tmp_path / "sandbox.sqlite3").value("weather:north") == "storm"
    before, runs = written(rl), run_ids(rl)

    answer = sandboxed.post("/admin/events/runs", "operator", json=document())

    assert answer.status_code == 409, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith(said), detail  # the field first: where in the body it is
    assert said.startswith(".".join(map(str, loc[1:])) + ": ")
    if case == "held target":
        assert str(holder) in detail
    assert written(rl) == before, "no event"
    assert run_ids(rl) == runs, "no run row"
    assert len(SandboxWorld(tmp_path / "sandbox.sqlite3").things()) == 0


@pytest.mark.parametrize(("case", "document", "loc", "said"), REFUSED, ids=[c[0] for c in REFUSED])
def test_the_cli_refuses_a_start_its_dry_run_would_with_exit_1_and_writes_nothing(
    cli: Cli,
    store_url: str,
    tmp_path: Path,
    case: str,
    document: Callable[[], dict[str, Any]],
    loc: list[Any],
    said: str,
) -> None:
    (tmp_path / "north.json").write_text(json.dumps(north()))
    holder = cli("start", "north.json").out.strip()
    cli("tick")
    (tmp_path / "refused.json").write_text(json.dumps(document()))
    with bootstrap(Settings(database_url=store_url), Registry()) as reader:
        before, runs = written(reader), run_ids(reader)

        done = cli("start", "refused.json", code=1)

        assert said in " ".join(done.out.split()), done.out
        if case == "held target":
            assert holder in done.out.replace("\n", "")
        assert written(reader) == before and run_ids(reader) == runs
    refused = cli("start", "refused.json", "--json", code=1)
    assert json.loads(refused.out)["detail"].startswith(said)


def test_a_start_says_every_problem_a_dry_run_finds_up_to_five(rl: Runledger, fair: Fair) -> None:
    steps = [stall(f"s{i}", kind="dragon") for i in range(7)]
    with pytest.raises(StartRefused) as refused:
        rl.runs.start(fair_spec(fair_phase("open", *steps)))
    assert len(refused.value.problems) == 7
    assert str(refused.value).startswith(
        "phases.0.steps.0.params.kind: no stall may sell dragons; phases.0.steps.1.params.kind:"
    )
    assert str(refused.value).endswith("; and 2 more")
    assert fair.world_calls == 0 and fair.calls["check"] == 7


@pytest.fixture
def two_runners(store_url: str, clock: Clock) -> Iterator[tuple[Runledger, Runledger]]:
    """Two runledgers on the test's store: one with the game's module loaded, one bare."""
    with_game = Registry()
    World(name=GAME).install(with_game, SPAWN)
    with ExitStack() as stack:
        full = stack.enter_context(runledgers(store_url, with_game, clock))()
        bare = stack.enter_context(runledgers(store_url, Registry(), clock))()
        yield full, bare


def test_an_action_only_another_live_runner_serves_stays_startable(
    two_runners: tuple[Runledger, Runledger],
) -> None:
    full, bare = two_runners
    document = spec(phase("p1", step("boss", SPAWN, count=2)))
    with pytest.raises(
        StartRefused, match=f'phases.0.steps.0.action: no module registers "{SPAWN}"'
    ):
        bare.runs.start(document)
    full.runner("serving").join()

    run = bare.runs.start(document)  # only its shape is checked here; the serving runner has it

    full.runs.advance_leg("serving")
    assert row(full, run).status == "completed"


def test_a_due_occurrence_waits_while_another_run_holds_its_target_then_starts(
    rl: Runledger, fair: Fair, clock: Clock
) -> None:
    holder = rl.runs.start(fair_spec(fair_phase("hold", lights(duration_s=120), advance="manual")))
    tick(rl)
    assert fair.lights == {"square": "on"}
    verified_and_published(rl, "fair", fair_spec(fair_phase("open", lights(duration_s=60))))
    occurrence = schedule(rl, "fair", 60)
    clock.advance(60)

    report = tick(rl)

    assert report.started.waiting == [occurrence] and report.started.started == []
    assert rl.occurrences.row(occurrence).state == "scheduled"
    assert run_id_for(occurrence) not in run_ids(rl)
    assert fair.calls["apply"] == 1, "only the holder applied"
    clock.advance(61)  # the holder's lease ends and is given back
    tick(rl)
    report = tick(rl)
    started = run_id_for(occurrence)
    assert started in report.started.started or rl.occurrences.row(occurrence).state == "started"
    assert row(rl, started).status != "aborted"
    assert fair.calls["apply"] == 2
    assert holder != started


def test_a_due_occurrence_whose_target_stays_held_starts_as_a_run_aborted_saying_who_holds_it(
    rl: Runledger, fair: Fair, clock: Clock
) -> None:
    holder = rl.runs.start(
        fair_spec(fair_phase("hold", lights(duration_s=86_000), advance="manual"))
    )
    tick(rl)
    verified_and_published(rl, "fair", fair_spec(fair_phase("open", stall(), lights())))
    occurrence = schedule(rl, "fair", 60)
    clock.advance(60)
    assert tick(rl).started.waiting == [occurrence]
    clock.advance(HELD_WAIT.total_seconds())

    report = tick(rl)

    started = run_id_for(occurrence)
    assert report.started.started == [started]
    found = row(rl, started)
    assert found.status == "aborted"
    assert found.end_reason is not None
    assert found.end_reason.startswith(
        f"not started: phases.0.steps.1.params.target: 'square' ({LIGHTS}) is held by run {holder}"
    )
    assert fair.calls["perform"] == 0 and fair.calls["apply"] == 1, "no step of it was made"
    assert rl.occurrences.row(occurrence).state == "started"

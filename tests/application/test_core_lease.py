"""core.lease: the bound, the one-target-one-run rule, and giving a value back, on an SQLite file
and on PostgreSQL; plus two processes racing for one target on PostgreSQL.

The World's lease ``weather`` overrides one value per target and restores it only if the target
still holds what was applied (compare-and-set), answering a drift otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.errors import BadRequest
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.reservation import Reservation
from runledger.projections.queries import EntryRow
from tests.support.playing import GAME, START, Clock, lease_step, phase, spec, step
from tests.support.reading import row, the_step, tick, written
from tests.support.world import LEASE, World

SPAWN = "game.spawn"
ROOT = Path(__file__).resolve().parents[2]
Opener = Callable[..., Runledger]


@pytest.fixture
def rl(opened: Opener) -> Runledger:
    return opened()


def leases(rl: Runledger, run: UUID) -> list[EntryRow]:
    rl.projector.catch_up()
    return [e for e in rl.queries.entries(run) if e.kind == "override"]


def holding(
    target: str = "plaza", value: Any = "storm", duration_s: float = 3600
) -> dict[str, Any]:
    """A run that leases a target, then waits in its manual phase for a person to end it."""
    return spec(
        phase(
            "p1",
            lease_step("weather", target, value, duration_s),
            step("guard", SPAWN),
            advance="manual",
        )
    )


def asking_later(value: Any = "snow") -> dict[str, Any]:
    """A run whose lease of the plaza waits behind a manual phase. A start refuses a target held
    now, as a dry run does: a run started before another took the plaza meets the holder when
    a person advances it, at dispatch."""
    return spec(
        phase("p0", step("first", SPAWN), advance="manual"),
        phase("p1", lease_step("weather", "plaza", value), step("guard", SPAWN), advance="manual"),
    )


def finish(rl: Runledger, run: UUID) -> None:
    assert rl.runs.advance(run, "alice") == "completed"


def held_message(target: str, run: UUID, until: str) -> str:
    return f"the target {target!r} is held by run {run} until {until} UTC"


# --- the bound and the registry ----------------------------------------------------------------


def test_a_lease_longer_than_event_lease_max_s_is_refused_at_start(
    opened: Opener, game: World
) -> None:
    rl = opened(lease_max_s=600)
    before = written(rl)
    with pytest.raises(BadRequest) as refused:
        rl.runs.start(holding(duration_s=601))
    assert str(refused.value) == (
        "phases.0.steps.0.params.duration_s: a lease may last at most 600s (EVENT_LEASE_MAX_S); "
        "601s was asked"
    )
    assert written(rl) == before
    run = rl.runs.start(holding(duration_s=600))
    tick(rl)
    [held] = leases(rl, run)
    assert held.until == START + timedelta(seconds=600)


def test_the_bound_holds_at_dispatch_too(opened: Opener, game: World) -> None:
    starter = opened(lease_max_s=3600)
    run = starter.runs.start(holding(duration_s=3000))
    tighter = opened(lease_max_s=60)
    tick(tighter)
    refused = the_step(tighter, run, "weather")
    assert refused.last_error == (
        "a lease may last at most 60s (EVENT_LEASE_MAX_S); 3000s was asked"
    )
    assert game.applies == {}
    assert leases(tighter, run) == []


def test_an_unknown_lease_is_refused_at_start_and_at_dispatch(rl: Runledger, game: World) -> None:
    document = spec(
        phase(
            "p1",
            step("fog", "core.lease", lease="fog", target="plaza", value="thick", duration_s=60),
        )
    )
    before = written(rl)
    with pytest.raises(BadRequest) as refused:
        rl.runs.start(document)
    assert (
        str(refused.value) == 'phases.0.steps.0.params.lease: no module registers the lease "fog"'
    )
    assert written(rl) == before
    run = rl.runs.start(spec(phase("p1", step("guard", SPAWN))))
    answer = rl.runs.core_lease.perform(
        {"lease": "fog", "target": "plaza", "value": "thick", "duration_s": 60},
        idempotency_key=f"{run}:fog",
        run_id=str(run),
    )
    assert answer == {"ok": False, "retry": False, "error": 'no module registers the lease "fog"'}
    assert game.applies == {}


def test_a_lease_is_applied_and_ledgered_as_an_override_with_its_baseline_and_until(
    rl: Runledger, game: World
) -> None:
    run = rl.runs.start(holding())
    tick(rl)
    [held] = leases(rl, run)
    assert (held.ref, held.action, held.status) == ("weather#plaza", "core.lease", "live")
    assert held.payload == {"baseline": "clear", "applied": "storm"}
    assert held.until == START + timedelta(seconds=3600)
    assert held.idempotency_key == f"{run}:weather"
    assert game.values == {"plaza": "storm"} and game.applies == {"plaza": 1}


# --- one target, one run -----------------------------------------------------------------------


def test_a_second_run_asking_for_a_held_target_fails_naming_the_holder_and_until(
    rl: Runledger, game: World, clock: Clock
) -> None:
    second = rl.runs.start(asking_later())
    first = rl.runs.start(holding())
    tick(rl)
    clock.advance(1)
    rl.runs.advance(second, "bea")
    tick(rl)
    refusal = held_message("plaza", first, "2026-12-02 13:00:00")
    asked = the_step(rl, second, "weather")
    assert (asked.state, asked.attempts, asked.last_error) == ("waiting", 1, refusal)
    assert rl.runs.describe(second)[1].why_not_advanced == (
        f"step weather failed 1 time: {refusal}; it will be retried"
    )
    tick(rl, 2)
    assert row(rl, second).status == "aborted"
    assert row(rl, second).end_reason == f"step weather failed 3 times: {refusal}"
    assert leases(rl, second) == []
    assert game.applies == {"plaza": 1} and game.values == {"plaza": "storm"}
    assert row(rl, first).status == "running"
    assert [e.status for e in leases(rl, first)] == ["live"]


def test_a_run_whose_lease_was_refused_is_given_back_completely(
    rl: Runledger, game: World, clock: Clock
) -> None:
    second = rl.runs.start(asking_later())
    rl.runs.start(holding())
    tick(rl)
    clock.advance(1)
    rl.runs.advance(second, "bea")
    tick(rl, 3)
    assert row(rl, second).status == "aborted"
    assert row(rl, second).cleanup_status == "complete"


def test_a_run_can_lease_again_once_the_first_run_has_ended_and_given_it_back(
    rl: Runledger, game: World
) -> None:
    first = rl.runs.start(holding())
    tick(rl)
    finish(rl, first)
    tick(rl)
    assert game.values == {"plaza": "clear"}
    second = rl.runs.start(holding(value="snow"))
    tick(rl)
    [held] = leases(rl, second)
    assert held.payload == {"baseline": "clear", "applied": "snow"}
    assert game.values == {"plaza": "snow"}


def test_a_target_stays_held_until_the_holders_lease_is_given_back_so_the_baseline_is_true(
    rl: Runledger, game: World, clock: Clock
) -> None:
    second = rl.runs.start(asking_later())
    first = rl.runs.start(holding(duration_s=60))
    tick(rl)
    clock.advance(61)
    rl.runs.advance(second, "bea")
    # One tick: the advance leg asks before the cleanup leg restores the first run's lease.
    tick(rl)
    assert (
        the_step(rl, second, "weather").last_error
        == held_message("plaza", first, "2026-12-02 12:01:00")
        + "; its lease has not been given back yet"
    )
    assert game.values == {"plaza": "clear"}
    tick(rl)
    [held] = leases(rl, second)
    assert held.payload == {"baseline": "clear", "applied": "snow"}
    assert row(rl, first).status == "running"


def test_a_drifted_lease_frees_its_target_and_a_person_asking_again_leaves_the_new_value(
    rl: Runledger, game: World
) -> None:
    # SPEC "Leases": a lease that drifted no longer holds its target
    # (tests/application/test_lease_release.py
    # has the rule on its own); asking again later must not undo the next run's value.
    first = rl.runs.start(holding())
    tick(rl)
    game.values["plaza"] = "sunny (a game master)"
    finish(rl, first)
    tick(rl)
    second = rl.runs.start(holding(value="snow"))
    tick(rl)
    [held] = leases(rl, second)
    assert held.payload == {"baseline": "sunny (a game master)", "applied": "snow"}
    retried = rl.cleanup.manual_cleanup(first, "ops")
    assert [h.entry_id for h in retried.held] == [leases(rl, first)[0].entry_id]
    [drifted] = leases(rl, first)  # left alone: the second run holds plaza
    assert (drifted.status, drifted.drift_current) == ("drifted", "sunny (a game master)")
    assert game.values == {"plaza": "snow"}


# --- giving the value back ---------------------------------------------------------------------


def test_a_lease_is_restored_when_its_run_ends(rl: Runledger, game: World) -> None:
    run = rl.runs.start(holding())
    tick(rl)
    finish(rl, run)
    report = tick(rl)
    assert report.swept[run].reverted >= 1
    assert game.restore_calls == [{"target": "plaza", "baseline": "clear", "expected": "storm"}]
    assert game.values == {"plaza": "clear"}
    assert [e.status for e in leases(rl, run)] == ["reverted"]
    assert row(rl, run).cleanup_status == "complete"


def test_a_lease_is_restored_at_its_until_while_its_run_goes_on(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = rl.runs.start(holding(duration_s=60))
    tick(rl)
    clock.advance(59)
    tick(rl)
    assert game.restore_calls == [] and game.values == {"plaza": "storm"}
    clock.advance(1)
    report = tick(rl)
    assert report.swept[run].reverted == 1
    assert game.values == {"plaza": "clear"}
    assert [e.status for e in leases(rl, run)] == ["reverted"]
    assert row(rl, run).status == "running"
    assert row(rl, run).cleanup_status == "pending"
    finish(rl, run)
    tick(rl)
    assert len(game.restore_calls) == 1
    assert row(rl, run).cleanup_status == "complete"


def test_a_lease_someone_else_changed_is_left_alone_and_reads_drifted(
    rl: Runledger, game: World
) -> None:
    run = rl.runs.start(holding())
    tick(rl)
    game.values["plaza"] = "sunny (a game master)"
    finish(rl, run)
    tick(rl, 2)
    [drifted] = leases(rl, run)
    assert (drifted.status, drifted.drift_current) == ("drifted", "sunny (a game master)")
    assert game.values == {"plaza": "sunny (a game master)"}
    assert len(game.restore_calls) == 1  # a drift is not retried automatically
    assert row(rl, run).cleanup_status == "incomplete"


def test_a_run_that_leases_one_target_twice_never_leaves_its_own_override_behind(
    rl: Runledger, game: World, clock: Clock
) -> None:
    # Back to back, a start refuses it (its dry run would); a person may advance at once.
    run = rl.runs.start(
        spec(
            phase("p1", lease_step("storm", "plaza", "storm"), advance="manual"),
            phase("p2", lease_step("rain", "plaza", "rain")),
        )
    )
    tick(rl)
    rl.runs.advance(run, "bea")
    for _ in range(4):  # enough for p2's step to succeed, or to be refused three times
        tick(rl)
        clock.advance(10)
    assert row(rl, run).status in ("completed", "aborted")
    assert game.values == {"plaza": "clear"}
    assert row(rl, run).cleanup_status == "complete"


def test_a_lease_whose_ref_cannot_be_ledgered_never_leaves_its_override_in_the_world(
    rl: Runledger, game: World, registry: Registry
) -> None:
    lease, target = "weather-" + "x" * 80, "t" * 120
    game.install_lease(registry, "far", lease)
    document = spec(
        phase(
            "p1", step("w", "core.lease", lease=lease, target=target, value="storm", duration_s=60)
        )
    )
    try:
        run = rl.runs.start(document)
    except BadRequest as refused:
        assert "phases.0.steps.0" in str(refused)
        assert game.applies == {}
        return
    tick(rl, 3)
    assert row(rl, run).status == "aborted"
    assert game.values.get(target, "clear") == "clear"
    assert row(rl, run).cleanup_status == "complete"


# --- two processes, one target -----------------------------------------------------------------


def race(
    folder: Path, url: str, runs: list[UUID], targets: list[str]
) -> list[list[dict[str, Any]]]:
    """Two worker processes each lease every target for their own run, from one go."""
    go, applied = folder / "go", folder / "applied"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for number, run in enumerate(runs):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.support.game",
                        "race",
                        "--url",
                        url,
                        "--run",
                        str(run),
                        "--ready",
                        str(folder / f"ready-{number}"),
                        "--go",
                        str(go),
                        "--applied",
                        str(applied),
                        "--targets",
                        ",".join(targets),
                    ],
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
        deadline = time.monotonic() + 60
        while not all((folder / f"ready-{n}").exists() for n in range(len(runs))):
            dead = [p.returncode for p in procs if p.poll() is not None]
            assert not dead and time.monotonic() < deadline, f"workers not ready: {dead}"
            time.sleep(0.01)
        go.touch()
        found = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()[-2000:]
            found.append(json.loads(out.decode().strip().splitlines()[-1]))
        return found
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()  # this child's own pid
                proc.wait(timeout=10)


@pytest.mark.postgres
@pytest.mark.slow
def test_two_processes_racing_for_each_target_on_postgresql_exactly_one_wins(
    pg_url: str, tmp_path: Path
) -> None:
    targets = [f"zone-{n}" for n in range(20)]
    registry = Registry()
    World(name=GAME).install(registry, SPAWN)
    with bootstrap(Settings(database_url=pg_url), registry) as rl:
        runs = [
            rl.runs.start(spec(phase("p1", step("guard", SPAWN)), name=f"racer {n}"))
            for n in range(2)
        ]
        answers = race(tmp_path, pg_url, runs, targets)
        winners: dict[str, UUID] = {}
        for run, answered in zip(runs, answers, strict=True):
            for answer in answered:
                if answer["ok"] is True:
                    assert answer["target"] not in winners, answer
                    winners[answer["target"]] = run
        assert sorted(winners) == sorted(targets)
        for run, answered in zip(runs, answers, strict=True):
            for answer in answered:
                if answer["ok"] is not True:
                    holder = winners[answer["target"]]
                    assert holder != run
                    assert answer.get("retry") is not False  # the hold ends: a retry may win
                    assert f"is held by run {holder} until" in answer["error"]
        lines = [json.loads(x) for x in (tmp_path / "applied").read_text().splitlines()]
        assert sorted((x["target"], x["run"]) for x in lines) == sorted(
            (t, str(r)) for t, r in winners.items()
        )
        for target, run in winners.items():
            reservation: Reservation = rl.app.repository.get(Reservation.create_id(LEASE, target))
            assert reservation.run_id == run

"""The start leg: due occurrences start themselves as runs of their pinned versions, exactly once
however many runners race, and when a runner comes back after none ran. Both stores."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID

import pytest

from runledger.application.runledger import Runledger
from runledger.application.services.running.runner import TickReport
from runledger.domain.definition import Stamp
from runledger.domain.occurrence import run_id_for
from runledger.domain.run import Origin, Run
from tests.support.definitions_support import (
    Fair,
    fair_fixture,
    fair_rl_fixture,
    fair_spec,
    phase,
    schedule,
    stall,
    verified_and_published,
)
from tests.support.playing import Clock
from tests.support.reading import row, tick

Opener = Callable[..., Runledger]

__all__ = ["fair_fixture", "fair_rl_fixture"]


def runs_of(rl: Runledger) -> list[UUID]:
    rl.projector.catch_up()
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT run_id FROM {rl_runs} ORDER BY run_id"))
        return [UUID(r["run_id"]) for r in cursor.fetchall()]


def test_a_due_occurrence_starts_as_a_run_of_its_pinned_version_showing_where_it_came_from(
    rl: Runledger, fair: Fair, clock: Clock
) -> None:
    verified_and_published(rl, "fair", fair_spec(phase("open", stall(count=2))))
    stamp = rl.definitions.get("fair").versions[0].verified
    occurrence = schedule(rl, "fair", 60)
    clock.advance(59)
    assert tick(rl).started.started == [] and runs_of(rl) == []
    clock.advance(1)

    report = tick(rl)

    run_id = run_id_for(occurrence)
    assert report.started.started == [run_id]
    assert report.advance.dispatched == 1, "the start leg comes before advance: same tick"
    assert fair.performed == [(f"{run_id}:stall", "apples")]
    origin = Origin("fair", 1, occurrence, stamp.by if stamp else None, stamp.at if stamp else None)
    assert row(rl, run_id).origin == origin
    run = rl.ledger.get_run(run_id)
    assert isinstance(run, Run) and run.origin == origin and run.started_by == "w1"
    found = rl.occurrences.row(occurrence)
    assert (found.state, found.run_id, found.started_by) == ("started", run_id, "w1")
    assert tick(rl).started.started == [], "started once"


def test_a_repinned_occurrence_starts_the_new_version_and_a_cancelled_one_never(
    rl: Runledger, fair: Fair, clock: Clock
) -> None:
    verified_and_published(rl, "fair", fair_spec())
    kept = schedule(rl, "fair", 60)
    dropped = schedule(rl, "fair", 60)
    rl.occurrences.cancel(dropped, "sam")
    rl.definitions.edit("fair", fair_spec(phase("open", stall(kind="pears"))), "ann")
    rl.definitions.publish("fair", "paul")  # unverified: the edit came after rita's dry run
    clock.advance(60)
    assert tick(rl).started.started == [run_id_for(kept)]
    assert [kind for _, kind in fair.performed] == ["pears"]
    assert row(rl, run_id_for(kept)).origin == Origin("fair", 2, kept, None, None)
    assert runs_of(rl) == [run_id_for(kept)]


def test_an_occurrence_due_while_no_runner_ran_starts_when_one_comes_back(
    opened: Opener, fair: Fair, clock: Clock
) -> None:
    author = opened()
    verified_and_published(author, "fair", fair_spec())
    occurrence = schedule(author, "fair", 60)
    author.close()
    clock.advance(3 * 3600)  # nobody ticked while it came due and long after

    back = opened()
    report = back.runner("back").once()

    assert report.started.started == [run_id_for(occurrence)]
    assert runs_of(back) == [run_id_for(occurrence)]
    assert row(back, run_id_for(occurrence)).started_at == clock.now


def test_two_runners_racing_for_one_due_occurrence_start_one_run(
    opened: Opener, fair: Fair, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both load the occurrence and build its run before either saves: exactly one save wins,
    and the other runner is told the occurrence already started."""
    runners = [opened(), opened()]
    verified_and_published(runners[0], "fair", fair_spec())
    occurrence = schedule(runners[0], "fair", 60)
    clock.advance(60)
    both_built = threading.Barrier(2)
    for rl in runners:
        held = rl.runs.start_version

        def save_together(*args: Any, held: Any = held, **kwargs: Any) -> UUID:
            both_built.wait(timeout=30)
            found: UUID = held(*args, **kwargs)
            return found

        monkeypatch.setattr(rl.runs, "start_version", save_together)

    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(rl.runner(f"r{i}").tick) for i, rl in enumerate(runners)]
        reports: list[TickReport] = [f.result(timeout=60) for f in futures]

    assert sorted(len(r.started.started) for r in reports) == [0, 1]
    assert sorted(r.started.already for r in reports) == [0, 1]
    assert runs_of(runners[0]) == [run_id_for(occurrence)]
    assert len(fair.performed) == 1


def test_two_runners_ticking_over_many_due_occurrences_start_each_exactly_once(
    opened: Opener, fair: Fair, clock: Clock
) -> None:
    runners = [opened(), opened()]
    verified_and_published(runners[0], "fair", fair_spec())
    occurrences = [schedule(runners[0], "fair", 60 + i) for i in range(12)]
    clock.advance(120)
    start = threading.Barrier(2)

    def race(rl: Runledger, name: str) -> list[UUID]:
        start.wait(timeout=30)
        return rl.starts.start_leg(name).started

    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(race, rl, f"r{i}") for i, rl in enumerate(runners)]
        started = [run for f in futures for run in f.result(timeout=120)]

    expected = sorted(run_id_for(o) for o in occurrences)
    assert sorted(started) == expected
    assert runs_of(runners[1]) == expected
    assert {o.state for o in runners[1].occurrences.listing("fair")} == {"started"}
    assert {o.verified for o in runners[1].occurrences.listing("fair")} == {
        Stamp("rita", runners[1].definitions.get("fair").versions[0].verified.at)  # type: ignore[union-attr]
    }


def test_a_run_already_saved_under_the_occurrence_s_id_is_never_started_twice(
    rl: Runledger, fair: Fair, clock: Clock
) -> None:
    """Were the run and the occurrence's Started ever saved apart (a crash between them), the
    run id taken from the occurrence would still refuse a second run."""
    verified_and_published(rl, "fair", fair_spec())
    occurrence = schedule(rl, "fair", 60)
    rl.runs.start(fair_spec(), run_id=run_id_for(occurrence))
    clock.advance(60)
    report = tick(rl)
    assert (report.started.started, report.started.already) == ([], 1)
    assert runs_of(rl) == [run_id_for(occurrence)]

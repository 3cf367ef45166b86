"""Runs from a spec document: phases, steps, dispatch, a person's controls and the W2 sentences.

Every test runs on an SQLite file and on a private PostgreSQL schema. The World is the port: a
world whose performs make things and whose reverts take them back, so "everything was given
back" is read off the world, not only off the ledger. The clock is a Clock the test moves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.application import AggregateNotFoundError

from runledger.application.errors import BadRequest
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.domain.errors import RunNotRunning
from runledger.domain.resource import Resource
from runledger.domain.step import Step
from runledger.projections.queries import EntryRow
from tests.support.playing import START, Clock, lease_step, phase, spec, step
from tests.support.reading import row, the_step, tick, written
from tests.support.world import Answer, World, answering, hangs, throws

SPAWN = "game.spawn"
BUILD = "game.build"
SLOW = "game.slow"
Opener = Callable[..., Runledger]


@pytest.fixture
def game(game: World, registry: Registry) -> World:
    """The conftest's game, with its build and slow actions too."""
    game.install(registry, BUILD)
    game.install(registry, SLOW, budget_ms=100)
    return game


@pytest.fixture
def rl(opened: Opener) -> Runledger:
    """A runledger on the test's clock."""
    return opened()


def phase_of(rl: Runledger, run: UUID) -> int:
    return rl.ledger.get_run(run).phase


def entries(rl: Runledger, run: UUID, kind: str | None = None) -> list[EntryRow]:
    rl.projector.catch_up()
    return [e for e in rl.queries.entries(run) if kind is None or e.kind == kind]


def headlines(rl: Runledger, run: UUID) -> list[str]:
    return [p.headline for p in rl.runs.describe(run)]


def made_then_lost(game: World, error: str = "the answer was lost") -> Answer:
    """A perform that changed the world and then failed to say so."""

    def answer(params: dict[str, Any], key: str) -> Any:
        game.make(params, key)
        raise RuntimeError(error)

    return answer


def two_phases(first: str = "auto", after_s: float = 0) -> dict[str, Any]:
    return spec(
        phase("p1", step("spawn", SPAWN, count=2), advance=first, after_s=after_s),
        phase("p2", step("build", BUILD)),
    )


# --- the lifecycle -----------------------------------------------------------------------------


def test_a_run_walks_its_phases_in_order_and_completes(rl: Runledger, game: World) -> None:
    run = rl.runs.start(two_phases())
    assert (row(rl, run).status, phase_of(rl, run)) == ("running", 0)
    first = tick(rl)
    assert (first.advance.dispatched, first.advance.phases_advanced) == (1, 1)
    assert [a for a, _ in game.performs] == [SPAWN]
    assert (row(rl, run).status, phase_of(rl, run)) == ("running", 1)
    second = tick(rl)
    assert [a for a, _ in game.performs] == [SPAWN, BUILD]
    assert second.advance.completed == 1
    assert row(rl, run).status == "completed"
    assert headlines(rl, run) == ["Phase p1: done", "Phase p2: done"]


def test_the_idempotency_key_is_the_run_and_the_step(rl: Runledger, game: World) -> None:
    run = rl.runs.start(two_phases())
    tick(rl)
    assert game.keys_performed(SPAWN) == [f"{run}:spawn"]
    [placeholder] = entries(rl, run, "@step")
    assert (placeholder.ref, placeholder.idempotency_key) == (f"{run}:spawn", f"{run}:spawn")
    assert placeholder.action == SPAWN and placeholder.module == "game"


def test_an_automatic_phase_waits_its_after_s_once_its_steps_are_done(
    rl: Runledger, clock: Clock
) -> None:
    run = rl.runs.start(two_phases(after_s=30))
    tick(rl)
    assert phase_of(rl, run) == 0
    assert headlines(rl, run)[0] == "Phase p1: steps done, waiting until 12:00:30 UTC"
    clock.advance(29)
    tick(rl)
    assert phase_of(rl, run) == 0
    clock.advance(1)
    assert headlines(rl, run)[0] == "Phase p1: steps done, waiting to advance"
    tick(rl)
    assert phase_of(rl, run) == 1


def test_the_wait_counts_from_when_the_steps_were_done_not_from_the_phase_start(
    rl: Runledger, game: World, clock: Clock
) -> None:
    game.script("perform", SPAWN, throws())
    run = rl.runs.start(two_phases(after_s=30))
    tick(rl)
    clock.advance(20)
    tick(rl)
    assert headlines(rl, run)[0] == "Phase p1: steps done, waiting until 12:00:50 UTC"
    clock.advance(29)
    tick(rl)
    assert phase_of(rl, run) == 0
    clock.advance(1)
    tick(rl)
    assert phase_of(rl, run) == 1


def test_a_manual_phase_waits_for_a_person_however_long_it_takes(
    rl: Runledger, clock: Clock
) -> None:
    run = rl.runs.start(two_phases(first="manual"))
    for _ in range(3):
        tick(rl)
        clock.advance(3600)
    assert phase_of(rl, run) == 0
    [p1] = [p for p in rl.runs.describe(run) if p.phase == "p1"]
    assert p1.headline == "Phase p1: steps done, waiting for a person to advance it"
    assert p1.why_not_advanced == "its advance rule is manual: a person must advance it"
    assert rl.runs.advance(run, "alice") == "advanced"
    assert phase_of(rl, run) == 1
    rl.projector.catch_up()
    [line] = [x for x in rl.queries.log(run) if x.kind == "run.phase_advanced"]
    assert line.detail == {"phase": 1, "by": "alice"}


def test_a_person_cannot_advance_a_phase_whose_steps_are_unfinished(
    rl: Runledger, game: World
) -> None:
    game.script("perform", SPAWN, throws())
    run = rl.runs.start(two_phases(first="manual"))
    for when in ("before any dispatch", "after a failed attempt"):
        before = written(rl)
        with pytest.raises(BadRequest, match="Phase p1 has steps still to finish"):
            rl.runs.advance(run, "alice")
        assert written(rl) == before, when
        assert phase_of(rl, run) == 0
        tick(rl)


def test_a_person_must_give_a_name_to_advance_a_phase(rl: Runledger) -> None:
    run = rl.runs.start(two_phases(first="manual"))
    tick(rl)
    before = written(rl)
    for name in ("", "   "):
        with pytest.raises(BadRequest, match="name of the person"):
            rl.runs.advance(run, name)
    assert written(rl) == before
    assert phase_of(rl, run) == 0


def test_a_person_cannot_advance_a_run_that_has_ended(rl: Runledger) -> None:
    run = rl.runs.start(two_phases(first="manual"))
    tick(rl)
    rl.ledger.cancel_run(run, "alice", cleanup=True)
    before = written(rl)
    with pytest.raises(RunNotRunning, match="has already ended"):
        rl.runs.advance(run, "bob")
    assert written(rl) == before


def test_a_person_advancing_the_last_phase_completes_the_run_and_the_next_tick_cleans_it(
    rl: Runledger, game: World
) -> None:
    run = rl.runs.start(spec(phase("p1", step("spawn", SPAWN), advance="manual")))
    tick(rl)
    assert rl.runs.advance(run, "alice") == "completed"
    assert row(rl, run).status == "completed"
    assert game.alive  # a person's advance is not a cleanup path of its own
    tick(rl)
    assert game.alive == {}
    assert row(rl, run).cleanup_status == "complete"


def test_the_person_who_advanced_the_last_phase_is_named_on_the_run(rl: Runledger) -> None:
    run = rl.runs.start(spec(phase("p1", step("spawn", SPAWN), advance="manual")))
    tick(rl)
    rl.runs.advance(run, "alice")
    assert row(rl, run).ended_by == "alice"


def test_runs_waiting_for_a_person_never_starve_the_runs_behind_them(
    opened: Opener, game: World, clock: Clock
) -> None:
    rl = opened(advance_run_batch=2)
    waiting = [rl.runs.start(two_phases(first="manual")) for _ in range(2)]
    clock.advance(1)
    late = rl.runs.start(two_phases())
    tick(rl, 4)
    assert [phase_of(rl, r) for r in waiting] == [0, 0]
    assert f"{late}:spawn" in game.keys_performed(SPAWN)
    assert row(rl, late).status == "completed"


# --- every terminal path gives everything back --------------------------------------------------


def festival() -> dict[str, Any]:
    return spec(
        phase("p1", lease_step("weather", "plaza"), step("spawn", SPAWN, count=2)),
        phase("p2", step("boss", SPAWN), step("stage", BUILD), advance="manual"),
    )


def end(rl: Runledger, run: UUID, how: str) -> None:
    if how == "completed":
        tick(rl)  # the stage's second attempt succeeds
        assert rl.runs.advance(run, "alice") == "completed"
    elif how == "cancelled":
        rl.ledger.cancel_run(run, "alice", cleanup=True)
    else:
        rl.ledger.abort_run(run, "the shard is closing")


@pytest.mark.parametrize("how", ["completed", "cancelled", "aborted"])
def test_cleanup_gives_everything_back_on_every_terminal_path(
    rl: Runledger, game: World, how: str
) -> None:
    game.script("perform", BUILD, made_then_lost(game))
    run = rl.runs.start(festival())
    tick(rl)
    tick(rl)  # phase p2: the boss is made, the stage is made but its answer lost
    assert phase_of(rl, run) == 1
    assert len(game.alive) == 4 and game.values == {"plaza": "storm"}
    end(rl, run, how)
    report = tick(rl)
    assert run in report.swept
    assert game.alive == {}
    assert game.values == {"plaza": "clear"}
    assert len(game.restore_calls) == 1
    assert row(rl, run).status == how
    assert row(rl, run).cleanup_status == "complete"
    assert {e.status for e in entries(rl, run)} <= {"reverted", "superseded"}


def test_an_abort_mid_phase_is_recorded_with_its_reason(rl: Runledger) -> None:
    run = rl.runs.start(festival())
    tick(rl)
    rl.ledger.abort_run(run, "the shard is closing")
    found = row(rl, run)
    assert (found.status, found.end_reason) == ("aborted", "the shard is closing")
    assert headlines(rl, run)[0] == "Phase p1: done"
    assert headlines(rl, run)[1] == "Phase p2: the run ended here (aborted)"
    assert tick(rl).advance.dispatched == 0  # an aborted run dispatches nothing more


def test_a_cancel_without_cleanup_keeps_every_entry_in_the_persons_name(
    rl: Runledger, game: World
) -> None:
    game.script("perform", BUILD, made_then_lost(game))
    run = rl.runs.start(festival())
    tick(rl, 2)
    alive = dict(game.alive)
    kept = rl.ledger.cancel_run(run, "alice", cleanup=False)
    tick(rl, 2)
    unresolved_before = [e for e in entries(rl, run) if e.status == "kept"]
    assert kept == len(unresolved_before) == 5  # lease, two spawned, the boss, a placeholder
    assert game.revert_calls == [] and game.restore_calls == []
    assert game.alive == alive and game.values == {"plaza": "storm"}
    for found in unresolved_before:
        last = list(rl.app.events.get(found.entry_id))[-1]
        assert isinstance(last, Resource.Kept) and last.by == "alice"
    found_row = row(rl, run)
    assert (found_row.status, found_row.ended_by, found_row.end_reason) == (
        "cancelled",
        "alice",
        "without cleanup",
    )
    assert found_row.cleanup_status == "complete"
    [line] = [x for x in rl.queries.log(run) if x.kind == "cleanup.kept"]
    assert line.detail == {"by": "alice", "resources": 5}


def test_a_cancel_with_cleanup_is_logged_in_the_persons_name(rl: Runledger, game: World) -> None:
    run = rl.runs.start(festival())
    tick(rl)
    rl.ledger.cancel_run(run, "alice", cleanup=True)
    tick(rl)
    found = row(rl, run)
    assert (found.status, found.ended_by, found.end_reason) == (
        "cancelled",
        "alice",
        "with cleanup",
    )
    assert game.alive == {} and game.values == {"plaza": "clear"}


def test_a_cancel_needs_a_persons_name_and_records_nothing(rl: Runledger) -> None:
    run = rl.runs.start(festival())
    tick(rl)
    before = written(rl)
    for name, cleanup in (("", False), ("  ", True)):
        with pytest.raises(BadRequest, match="name of the person"):
            rl.ledger.cancel_run(run, name, cleanup=cleanup)
    assert written(rl) == before
    assert row(rl, run).status == "running"


# --- dispatch ----------------------------------------------------------------------------------


def test_the_placeholder_is_in_the_store_before_perform_is_called(
    rl: Runledger, opened: Opener, game: World
) -> None:
    observer = opened()
    seen: dict[str, Any] = {}

    def look_then_make(params: dict[str, Any], key: str) -> Any:
        run = UUID(key.split(":", 1)[0])
        held: Resource = observer.app.repository.get(Resource.create_id(run, "spawn", "@step", key))
        seen["placeholder"] = (held.kind, held.ref, held.state)
        try:
            observer.app.repository.get(Resource.create_id(run, "spawn", "creature", f"{key}/0"))
            seen["named"] = True
        except AggregateNotFoundError:
            seen["named"] = False
        return game.make(params, key)

    game.script("perform", SPAWN, look_then_make)
    run = rl.runs.start(two_phases())
    key = f"{run}:spawn"
    tick(rl)
    assert seen == {"placeholder": ("@step", key, "placeholder"), "named": False}
    placeholder = Resource.create_id(run, "spawn", "@step", key)
    named = [Resource.create_id(run, "spawn", "creature", f"{key}/{i}") for i in range(2)]
    assert rl.queries.entry(placeholder).status == "superseded"  # type: ignore[union-attr]
    assert {rl.queries.entry(i).status for i in named} == {"live"}  # type: ignore[union-attr]


def test_the_answer_and_the_placeholders_retirement_are_one_save(
    rl: Runledger, game: World
) -> None:
    run = rl.runs.start(two_phases())
    key = f"{run}:spawn"
    tick(rl)
    placeholder = Resource.create_id(run, "spawn", "@step", key)
    named = [Resource.create_id(run, "spawn", "creature", f"{key}/{i}") for i in range(2)]
    notes = rl.app.recorder.select_notifications(start=1, limit=1000)
    position = {(n.originator_id, n.originator_version): n.id for n in notes}
    saved = [position[(placeholder, 2)], position[(named[0], 1)], position[(named[1], 1)]]
    succeeded = position[(Step.create_id(run, "spawn"), 3)]
    # One save's events take consecutive positions, in a single transaction.
    assert sorted([*saved, succeeded]) == list(range(min(saved), min(saved) + 4))


def test_a_perform_that_fails_twice_then_succeeds_keeps_one_key_and_one_placeholder(
    rl: Runledger, game: World
) -> None:
    game.script("perform", SPAWN, throws(), answering(None))
    run = rl.runs.start(two_phases())
    key = f"{run}:spawn"
    tick(rl, 2)
    assert (the_step(rl, run, "spawn").attempts, phase_of(rl, run)) == (2, 0)
    tick(rl)
    assert game.keys_performed(SPAWN) == [key, key, key]
    [placeholder] = entries(rl, run, "@step")
    assert placeholder.status == "superseded"
    assert {e.ref for e in entries(rl, run, "creature")} == {f"{key}/0", f"{key}/1"}
    assert (the_step(rl, run, "spawn").state, phase_of(rl, run)) == ("done", 1)
    assert row(rl, run).status == "running"


def test_three_failures_abort_the_run_and_cleanup_gives_the_placeholder_back_by_its_key(
    rl: Runledger, game: World
) -> None:
    lost = made_then_lost(game, "the boss fell through the floor")
    game.script("perform", SPAWN, lost, lost, lost)
    run = rl.runs.start(spec(phase("p1", step("spawn-boss", SPAWN)), phase("p2", step("b", BUILD))))
    key = f"{run}:spawn-boss"
    tick(rl, 2)
    assert row(rl, run).status == "running"
    report = tick(rl)
    error = f"{SPAWN} raised RuntimeError: the boss fell through the floor"
    reason = f"step spawn-boss failed 3 times: {error}"
    assert report.advance.aborted == 1
    assert (row(rl, run).status, row(rl, run).end_reason) == ("aborted", reason)
    assert report.swept[run].reverted == 1  # in the same tick
    assert [(r.action, r.key, r.refs) for r in game.revert_calls] == [(SPAWN, key, ())]
    assert game.alive == {}
    assert game.keys_performed(SPAWN) == [key, key, key]
    assert game.keys_performed(BUILD) == []
    assert row(rl, run).cleanup_status == "complete"
    [p1, p2] = rl.runs.describe(run)
    assert p1.headline == f"Phase p1: {reason}"
    assert p1.why_not_advanced == "step spawn-boss cannot succeed"
    assert p2.headline == "Phase p2: not started (after p1)"


def die_while_dispatching(rl: Runledger, run: UUID, worker: str, for_s: float) -> None:
    """What a worker leaves behind when it dies mid-dispatch: its claim and its placeholder."""
    claimed = the_step(rl, run, "spawn")
    now = rl.clock()
    claimed.claim_dispatch(worker, now, now + timedelta(seconds=for_s))
    rl.app.save(claimed)
    rl.ledger.record_placeholder(run, "spawn", "game", SPAWN, claimed.idempotency_key)


def test_a_dispatch_whose_worker_died_is_reclaimed_with_the_same_key(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = rl.runs.start(two_phases())
    die_while_dispatching(rl, run, "w-dead", 40)
    assert tick(rl).advance.dispatched == 0
    assert rl.runs.describe(run)[0].why_not_advanced == (
        "step spawn is being dispatched (attempt 1)"
    )
    clock.advance(40)
    tick(rl)
    assert game.keys_performed(SPAWN) == [f"{run}:spawn"]
    [placeholder] = entries(rl, run, "@step")
    assert placeholder.status == "superseded"
    assert (the_step(rl, run, "spawn").attempts, phase_of(rl, run)) == (2, 1)


def test_a_step_whose_three_workers_all_died_aborts_the_run_and_is_given_back(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = rl.runs.start(two_phases())
    for number in range(3):
        die_while_dispatching(rl, run, f"w-dead-{number}", 5)
        clock.advance(5)
    report = tick(rl)
    reason = "step spawn failed 3 times: no answer after 3 attempts"
    assert (row(rl, run).status, row(rl, run).end_reason) == ("aborted", reason)
    assert headlines(rl, run)[0] == f"Phase p1: {reason}"
    assert game.performs == []
    assert [(r.key, r.refs) for r in game.revert_calls] == [(f"{run}:spawn", ())]
    assert report.swept[run].reverted == 1


MALFORMED: list[tuple[str, Answer, str]] = [
    ("None", answering(None), "answered null, which is not a perform answer"),
    ("ok is a string", answering({"ok": "yes", "resources": []}), "not a perform answer"),
    ("ok without resources", answering({"ok": True}), "not a perform answer"),
    ("a list", answering([{"kind": "creature", "ref": "c1"}]), "not a perform answer"),
    ("resources not a list", answering({"ok": True, "resources": "c1"}), "malformed resource"),
    (
        "an empty ref",
        answering({"ok": True, "resources": [{"kind": "c", "ref": ""}]}),
        "malformed resource",
    ),
    ("a refusal", answering({"ok": False, "error": "no room"}), "no room"),
    (
        "a throw",
        throws("the shard dropped the connection"),
        "raised RuntimeError: the shard dropped the connection",
    ),
    (
        "a hang past budget_ms",
        hangs(1.0, {"ok": True, "resources": []}),
        "did not answer within 0.1s",
    ),
]


@pytest.mark.parametrize(
    ("answer", "error"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_a_malformed_perform_answer_is_a_failure_with_a_readable_error(
    rl: Runledger, game: World, answer: Answer, error: str
) -> None:
    game.script("perform", SLOW, answer)
    run = rl.runs.start(spec(phase("p1", step("spawn", SLOW)), phase("p2", step("b", BUILD))))
    tick(rl)
    failed = the_step(rl, run, "spawn")
    assert (failed.state, failed.attempts) == ("waiting", 1)
    assert failed.last_error is not None and error in failed.last_error
    [placeholder] = entries(rl, run)
    assert placeholder.kind == "@step" and placeholder.status == "placeholder"
    assert (row(rl, run).status, phase_of(rl, run)) == ("running", 0)


def test_three_malformed_answers_of_different_shapes_abort_the_run(
    rl: Runledger, game: World
) -> None:
    game.script(
        "perform",
        SLOW,
        answering(None),
        hangs(1.0, {"ok": True, "resources": []}),
        answering({"ok": "yes", "resources": []}),
    )
    run = rl.runs.start(spec(phase("p1", step("spawn", SLOW)), phase("p2", step("b", BUILD))))
    tick(rl, 2)
    assert the_step(rl, run, "spawn").last_error == f"{SLOW} did not answer within 0.1s"
    report = tick(rl)
    error = the_step(rl, run, "spawn").last_error
    assert error is not None and "not a perform answer" in error
    assert row(rl, run).end_reason == f"step spawn failed 3 times: {error}"
    assert game.keys_performed(SLOW) == [f"{run}:spawn"] * 3
    assert [(r.key, r.refs) for r in game.revert_calls] == [(f"{run}:spawn", ())]
    assert report.swept[run].reverted == 1
    assert row(rl, run).cleanup_status == "complete"


def test_a_refusal_that_says_retrying_cannot_help_aborts_at_once(
    rl: Runledger, game: World
) -> None:
    refusal = {"ok": False, "retry": False, "error": "no such boss in this shard"}
    game.script("perform", SPAWN, answering(refusal))
    run = rl.runs.start(spec(phase("p1", step("spawn", SPAWN)), phase("p2", step("b", BUILD))))
    report = tick(rl)
    assert report.advance.aborted == 1
    assert row(rl, run).end_reason == "step spawn failed 1 time: no such boss in this shard"
    assert game.keys_performed(SPAWN) == [f"{run}:spawn"]
    assert report.swept[run].reverted == 1  # its placeholder, by its key
    assert row(rl, run).cleanup_status == "complete"


def test_a_run_that_completes_in_a_tick_is_cleaned_in_the_same_tick(
    rl: Runledger, game: World
) -> None:
    run = rl.runs.start(spec(phase("p1", lease_step("weather", "plaza"), step("spawn", SPAWN))))
    report = tick(rl)
    assert report.advance.completed == 1
    assert report.swept[run].reverted == 2
    assert game.alive == {} and game.values == {"plaza": "clear"}
    assert row(rl, run).cleanup_status == "complete"


def test_what_a_perform_made_is_ledgered_even_if_its_run_was_cancelled_and_swept_meanwhile(
    rl: Runledger, opened: Opener, game: World
) -> None:
    person = opened()

    def slow_answer(params: dict[str, Any], key: str) -> Any:
        run = UUID(key.split(":", 1)[0])
        person.ledger.cancel_run(run, "alice", cleanup=True)
        person.cleanup.sweep("w2")  # gives the placeholder back: nothing is made under it yet
        return game.make(params, key)

    game.script("perform", SPAWN, slow_answer)
    run = rl.runs.start(two_phases())
    tick(rl)
    assert {e.kind for e in entries(rl, run)} == {"@step", "creature"}
    assert game.alive == {}
    assert row(rl, run).cleanup_status == "complete"


def test_what_a_perform_made_after_a_cancel_without_cleanup_is_ledgered_as_kept(
    rl: Runledger, opened: Opener, game: World
) -> None:
    person = opened()

    def slow_answer(params: dict[str, Any], key: str) -> Any:
        person.ledger.cancel_run(UUID(key.split(":", 1)[0]), "alice", cleanup=False)
        return game.make(params, key)

    game.script("perform", SPAWN, slow_answer)
    run = rl.runs.start(two_phases())
    tick(rl)
    assert sorted((e.kind, e.status) for e in entries(rl, run)) == [
        ("@step", "kept"),
        ("creature", "kept"),
        ("creature", "kept"),
    ]
    assert len(game.alive) == 2 and game.revert_calls == []
    assert row(rl, run).cleanup_status == "complete"


# --- where a phase stands, in words (W2) -------------------------------------------------------


def test_w2_a_step_that_failed_once_will_be_retried(rl: Runledger, game: World) -> None:
    game.script("perform", SPAWN, answering({"ok": False, "error": "no room"}))
    run = rl.runs.start(two_phases())
    assert rl.runs.describe(run)[0].why_not_advanced == (
        "step spawn waits for the runner to dispatch it"
    )
    tick(rl)
    [p1, p2] = rl.runs.describe(run)
    assert p1.headline == "Phase p1: running steps"
    assert p1.why_not_advanced == "step spawn failed 1 time: no room; it will be retried"
    assert p2.headline == "Phase p2: not started (after p1)"


def test_w2_a_phase_whose_steps_are_done_never_reads_not_started(
    rl: Runledger, game: World, clock: Clock
) -> None:
    game.script("perform", BUILD, throws())
    run = rl.runs.start(
        spec(
            phase("p1", step("spawn", SPAWN), after_s=10),
            phase("p2", step("build", BUILD), step("boss", SPAWN), advance="manual"),
            phase("p3", step("finale", SPAWN)),
        )
    )
    seen: list[str] = []

    def check() -> None:
        loaded = rl.runs.streams.load(
            Step, [Step.create_id(run, s) for s in ("spawn", "build", "boss", "finale")]
        )
        done = {s.step_id for s in loaded.values() if s.state == "done"}
        phases = {"p1": {"spawn"}, "p2": {"build", "boss"}, "p3": {"finale"}}
        for status in rl.runs.describe(run):
            seen.append(status.headline)
            if phases[status.phase] <= done:
                assert "not started" not in status.headline, status.headline
                assert "running steps" not in status.headline, status.headline

    for move in (0, 11, 0, 0):
        clock.advance(move)
        check()
        tick(rl)
        check()
    rl.runs.advance(run, "alice")
    check()
    tick(rl)
    check()
    assert row(rl, run).status == "completed"
    assert "Phase p1: steps done, waiting until 12:00:10 UTC" in seen
    assert "Phase p2: steps done, waiting for a person to advance it" in seen
    assert seen[-3:] == ["Phase p1: done", "Phase p2: done", "Phase p3: done"]


def test_w2_waiting_until_is_said_in_utc_whatever_the_hour(rl: Runledger, clock: Clock) -> None:
    clock.advance(11 * 3600 + 59 * 60 + 50)  # 23:59:50 UTC
    run = rl.runs.start(two_phases(after_s=15))
    tick(rl)
    [p1, _] = rl.runs.describe(run)
    assert p1.headline == "Phase p1: steps done, waiting until 00:00:05 UTC"
    assert p1.why_not_advanced == "it advances 15s after its last step finished"
    assert clock.now.date() == START.date()


# --- bad specs ---------------------------------------------------------------------------------


def good() -> dict[str, Any]:
    return spec(
        phase("p1", step("spawn", SPAWN), lease_step("weather", "plaza", duration_s=60)),
        phase("p2", step("build", BUILD), advance="manual"),
    )


def changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document = good()
    change(document)
    return document


BAD: list[tuple[str, Any, str]] = [
    (
        "unknown action",
        changed(lambda d: d["phases"][1]["steps"][0].update(action="game.nope")),
        'phases.1.steps.0.action: no module registers "game.nope"',
    ),
    (
        "an action without perform",
        changed(lambda d: d["phases"][0]["steps"][0].update(action="other.undo")),
        'phases.0.steps.0.action: no module registers "other.undo"',
    ),
    (
        "duplicate step ids across phases",
        changed(lambda d: d["phases"][1]["steps"][0].update(id="spawn")),
        "steps: the id 'spawn' is used twice",
    ),
    (
        "duplicate step ids in a phase",
        changed(lambda d: d["phases"][0]["steps"].append(step("spawn", SPAWN))),
        "steps: the id 'spawn' is used twice",
    ),
    (
        "duplicate phase ids",
        changed(lambda d: d["phases"][1].update(id="p1")),
        "phases: the id 'p1' is used twice",
    ),
    (
        "a negative after_s",
        changed(lambda d: d["phases"][0].update(after_s=-5)),
        "phases.0.after_s: must be at least 0",
    ),
    (
        "a negative lease duration",
        changed(lambda d: d["phases"][0]["steps"][1]["params"].update(duration_s=-60)),
        "phases.0.steps.1.params.duration_s: must be more than 0",
    ),
    (
        "a zero lease duration",
        changed(lambda d: d["phases"][0]["steps"][1]["params"].update(duration_s=0)),
        "phases.0.steps.1.params.duration_s",
    ),
    (
        "a lease without a target",
        changed(lambda d: d["phases"][0]["steps"][1]["params"].pop("target")),
        "phases.0.steps.1.params.target: is required",
    ),
    ("no name", changed(lambda d: d.pop("name")), "name: is required"),
    ("no phases", changed(lambda d: d.update(phases=[])), "phases: must not be empty"),
    (
        "a phase without steps",
        changed(lambda d: d["phases"][1].pop("steps")),
        "phases.1.steps: is required",
    ),
    (
        "a phase with no steps",
        changed(lambda d: d["phases"][1].update(steps=[])),
        "phases.1.steps: must not be empty",
    ),
    (
        "a step without action",
        changed(lambda d: d["phases"][0]["steps"][0].pop("action")),
        "phases.0.steps.0.action: is required",
    ),
    (
        "a step without id",
        changed(lambda d: d["phases"][0]["steps"][0].pop("id")),
        "phases.0.steps.0.id: is required",
    ),
    (
        "an unknown advance rule",
        changed(lambda d: d["phases"][0].update(advance="later")),
        "phases.0.advance: must be 'manual' or 'auto'",
    ),
    (
        "a misspelt field",
        changed(lambda d: d["phases"][0].update(after=30)),
        "phases.0.after: is not a field this takes",
    ),
    ("not JSON", '{"name": "festival", "phases": [', "the spec is not valid JSON"),
    ("a JSON list", "[]", "spec: must be an object ({...})"),
]


def test_a_bad_spec_is_refused_naming_the_field_and_nothing_is_recorded(
    rl: Runledger, registry: Registry
) -> None:
    registry.module("other").action("other.undo", revert=lambda **_: {"ok": True})
    before = written(rl)
    wrong: dict[str, str] = {}
    for what, document, error in BAD:
        try:
            rl.runs.start(document)
            wrong[what] = "accepted"
        except BadRequest as refused:
            if error not in str(refused):
                wrong[what] = str(refused)
    assert wrong == {}
    assert written(rl) == before
    assert rl.queries.running_runs(10) == []


def test_a_good_spec_is_accepted_as_json_text_too(rl: Runledger) -> None:
    run = rl.runs.start(json.dumps(good()))
    assert row(rl, run).status == "running"
    assert row(rl, run).name == "festival"


@pytest.mark.parametrize("after_s", [1e12, float("inf")], ids=["1e12", "infinity"])
def test_a_wait_past_the_calendar_is_refused_or_at_least_leaves_the_run_readable(
    rl: Runledger, after_s: float
) -> None:
    try:
        run = rl.runs.start(two_phases(after_s=after_s))
    except BadRequest as refused:
        assert "phases.0.after_s" in str(refused)
        return
    tick(rl)
    assert headlines(rl, run)[0].startswith("Phase p1: steps done, waiting")

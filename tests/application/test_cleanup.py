"""Giving back, through the application, on an SQLite file and on PostgreSQL.

The World is the port: a scripted game world that counts every call. Runs are started from a
spec and their steps answered by the World's performs (tests.support.playing); the clock is the
test's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from runledger.application.errors import BadRequest
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.domain.resource import Resource
from tests.support.by_hand import claim
from tests.support.playing import (
    BUILD,
    SPAWN,
    Clock,
    complete,
    ended,
    ended_run,
    fails,
    key,
    leases,
    made,
    makes,
    override,
    placeholder,
    play,
    runledgers,
    start,
)
from tests.support.reading import entry, lines, status, wall
from tests.support.world import World, answering, hangs, throws

Factory = Callable[..., Runledger]


def served_elsewhere(store_url: str, clock: Clock, *steps: dict[str, Any]) -> UUID:
    """A completed run made by a process whose modules this one has not loaded."""
    registry = Registry()
    World(name="gone").install(registry, "gone.spawn")
    with runledgers(store_url, registry, clock) as open_one:
        return ended(open_one(), *steps)


# --- the reference's three defects, as regressions ---------------------------------------------


def test_a_lease_only_run_is_given_back(rl: Runledger, world: World, clock: Clock) -> None:
    seen: list[tuple[Any, Any, str]] = []

    def restore(baseline: Any, expected: Any, target: str) -> Any:
        seen.append((baseline, expected, target))
        return {"ok": True}

    world.answer("restore", world.lease, restore)
    run = ended(rl, leases(), name="weather only")
    held = override(run)
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    assert world.restores == {"plaza": 1}
    assert seen == [("clear", "storm", "plaza")]
    assert entry(rl, held).status == "reverted"
    assert status(rl, run) == "complete"
    assert world.reverts == {}


def test_three_attempts_are_three_real_calls_on_three_sweeps(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(max_revert_attempts=3)
    world.answer("revert", SPAWN, answering({"ok": False, "error": "the shard is busy"}))
    run, [c1] = ended_run(rl, ["c1"])
    seen = []
    for _ in range(4):
        rl.cleanup.sweep("w1")
        seen.append((world.reverts[key(run)], entry(rl, c1).attempts, status(rl, run)))
    assert seen == [
        (1, 1, "pending"),
        (2, 2, "pending"),
        (3, 3, "incomplete"),
        (3, 3, "incomplete"),
    ]
    assert entry(rl, c1).last_error == "the shard is busy"


def test_incomplete_waits_until_nothing_is_retryable(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(max_revert_attempts=2)
    world.answer("revert", SPAWN, throws())
    run, _ = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    assert status(rl, run) == "incomplete"
    assert world.reverts == {key(run): 2}


def test_a_terminal_failure_shows_its_real_attempt_count_and_is_not_retried(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer(
        "revert", SPAWN, answering({"ok": False, "retry": False, "error": "the boss is dead"})
    )
    run, [c1] = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.status, row.attempts, row.terminal, row.last_error) == (
        "failing",
        1,
        True,
        "the boss is dead",
    )
    assert world.reverts == {key(run): 1}
    assert status(rl, run) == "incomplete"


# --- classifying answers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        None,
        [],
        "x",
        {"ok": "yes"},
        {"ok": 1},
        {"ok": True, "failed": "a"},
        {},
        0,
        True,
        {"ok": True, "failed": [1]},
        {"drifted": "yes"},
        {"ok": False, "retry": False},
    ],
    ids=repr,
)
def test_a_malformed_revert_answer_is_a_retry_with_a_readable_error(
    rl: Runledger, world: World, clock: Clock, answer: Any
) -> None:
    world.answer("revert", SPAWN, answering(answer))
    run, [c1] = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.status, row.attempts, row.terminal) == ("failing", 1, False)
    assert row.last_error is not None and SPAWN in row.last_error
    assert "not a revert answer" in row.last_error
    assert status(rl, run) == "pending"


def test_a_refusal_that_asks_for_a_retry_is_a_retry_with_its_own_error(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, answering({"ok": False, "retry": True, "error": "try later"}))
    run, [c1] = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.status, row.terminal, row.last_error) == ("failing", False, "try later")
    assert status(rl, run) == "pending"


def test_a_revert_that_hangs_past_its_budget_is_a_retry(
    make_runledger: Factory, registry: Registry, clock: Clock
) -> None:
    world = World(name="slow")
    world.install(registry, "slow.spawn", budget_ms=100)
    world.answer("revert", "slow.spawn", hangs(1.0, {"ok": True}))
    rl = make_runledger()
    run, [c1] = ended_run(rl, ["c1"], action="slow.spawn", name="slow")
    started = wall()
    rl.cleanup.sweep("w1")
    assert wall() - started < 0.9
    row = entry(rl, c1)
    assert (row.status, row.attempts, row.terminal) == ("failing", 1, False)
    assert row.last_error == "slow.spawn did not answer within 0.1s"
    assert status(rl, run) == "pending"


def test_a_revert_that_throws_is_a_retry(rl: Runledger, world: World, clock: Clock) -> None:
    world.answer("revert", SPAWN, throws())
    _, [c1] = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.status, row.terminal) == ("failing", False)
    assert row.last_error == f"{SPAWN} raised RuntimeError: the shard dropped the connection"


def test_an_async_revert_is_awaited(rl: Runledger, registry: Registry, clock: Clock) -> None:
    async def revert(resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        return {"ok": True}

    perform = World(name="asyncworld").verb("perform", "asyncworld.spawn")
    registry.module("asyncworld").action("asyncworld.spawn", perform=perform, revert=revert)
    _, [c1] = ended_run(rl, ["c1"], action="asyncworld.spawn", name="async")
    rl.cleanup.sweep("w1")
    assert entry(rl, c1).status == "reverted"


def test_refs_the_module_names_as_failed_fail_and_the_rest_are_reverted(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, answering({"ok": True, "failed": ["c2"]}))
    run, [c1, c2, c3] = ended_run(rl, ["c1", "c2", "c3"])
    summaries = rl.cleanup.sweep("w1")
    assert [entry(rl, i).status for i in (c1, c2, c3)] == ["reverted", "failing", "reverted"]
    assert entry(rl, c2).last_error == f'{SPAWN} could not give "c2" back'
    assert world.reverted_refs == {"c1": 1, "c3": 1}
    assert (summaries[run].reverted, summaries[run].failed, summaries[run].remaining) == (2, 1, 1)
    [call] = lines(rl, run, "cleanup.failed")
    assert call.detail["failed"] == ["c2"]
    assert status(rl, run) == "pending"
    world.answer("revert", SPAWN, answering({"ok": True}))
    rl.cleanup.sweep("w1")
    assert world.reverted_refs == {"c1": 1, "c2": 1, "c3": 1}
    assert status(rl, run) == "complete"


def test_a_drift_is_not_retried_and_stays_visible(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, answering({"drifted": True, "current": {"hp": 7}}))
    run, [c1] = ended_run(rl, ["c1"])
    summaries = rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    assert world.reverts == {key(run): 1}
    row = entry(rl, c1)
    assert (row.status, row.attempts, row.drift_current) == ("drifted", 1, {"hp": 7})
    assert row.last_error is not None and '{"hp": 7}' in row.last_error
    assert summaries[run].drifted == 1
    [call] = lines(rl, run, "cleanup.drifted")
    assert call.detail["resources"] == ["creature:c1"]
    assert status(rl, run) == "incomplete"


def test_a_drifted_lease_is_left_alone_with_the_current_value(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer(
        "restore",
        world.lease,
        lambda baseline, expected, target: {"drifted": True, "current": "hail"},
    )
    run = ended(rl, leases(), name="weather")
    held = override(run)
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    assert world.restores == {"plaza": 1}
    row = entry(rl, held)
    assert (row.status, row.drift_current, row.payload) == (
        "drifted",
        "hail",
        {"baseline": "clear", "applied": "storm"},
    )
    assert status(rl, run) == "incomplete"


def test_an_action_no_live_runner_serves_is_retried_then_fails_terminally_naming_it(
    rl: Runledger, store_url: str, clock: Clock
) -> None:
    run = served_elsewhere(store_url, clock, makes("spawn", "c1", action="gone.spawn"))
    [c1] = made(run, "spawn", "c1")
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.status, row.attempts, row.terminal) == ("failing", 1, False)
    assert row.last_error == "no live runner serves gone.spawn"
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.status, row.attempts, row.terminal) == ("failing", 3, True)
    assert row.last_error is not None and 'no module registers "gone.spawn"' in row.last_error
    assert status(rl, run) == "incomplete"
    calls = lines(rl, run, "cleanup.failed")
    assert all("gone.spawn" in call.detail["error"] for call in calls) and len(calls) == 3


def test_an_action_without_revert_fails_terminally_naming_it(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    perform = World(name="oneway").verb("perform", "oneway.spawn")
    registry.module("oneway").action("oneway.spawn", perform=perform)
    _, [c1] = ended_run(rl, ["c1"], action="oneway.spawn", name="one way")
    rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert (row.terminal, row.attempts) == (True, 1)
    assert row.last_error is not None and "oneway.spawn" in row.last_error


def test_a_lease_no_live_runner_serves_is_retried_then_fails_terminally_naming_it(
    rl: Runledger, store_url: str, clock: Clock
) -> None:
    held = override(served_elsewhere(store_url, clock, leases()))
    rl.cleanup.sweep("w1")
    row = entry(rl, held)
    assert (row.status, row.terminal, row.attempts) == ("failing", False, 1)
    assert row.last_error == "no live runner serves weather"
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    row = entry(rl, held)
    assert (row.status, row.terminal, row.attempts) == ("failing", True, 3)
    assert row.last_error is not None and '"weather"' in row.last_error


def test_an_answer_that_says_both_ok_and_drifted_does_not_read_as_given_back(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer(
        "restore",
        world.lease,
        lambda baseline, expected, target: {
            "ok": True,
            "drifted": True,
            "current": "hail",
        },
    )
    run = ended(rl, leases(), name="weather")
    held = override(run)
    rl.cleanup.sweep("w1")
    assert entry(rl, held).status != "reverted"
    assert status(rl, run) != "complete"


WAIT = {"id": "wait", "action": "sky.wait", "params": {}}


def lease_spec(name: str) -> dict[str, Any]:
    step = {
        "id": "storm",
        "action": "core.lease",
        "params": {"lease": "sky", "target": "plaza", "value": "storm", "duration_s": 600},
    }
    return {"name": name, "phases": [{"id": "p1", "advance": "manual", "steps": [step]}]}


def test_a_refused_lease_step_leaves_nothing_for_a_person_to_look_at(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    restores: list[str] = []

    def restore(
        baseline: Any, expected: Any, run_id: str, target: str, idempotency_key: str
    ) -> Any:
        restores.append(target)
        return {"ok": True}

    sky = registry.module("sky")
    sky.lease(
        "sky",
        apply=lambda target, value, run_id, idempotency_key: {
            "ok": True,
            "baseline": "clear",
            "applied": value,
        },
        restore=restore,
    )
    sky.action("sky.wait", perform=lambda **_: {"ok": True, "resources": []})
    # A start refuses a target held now: this run was started before the holder took it, and
    # meets it at dispatch once a person advances it to its lease.
    later = lease_spec("refused")
    later["phases"].insert(0, {"id": "p0", "advance": "manual", "steps": [WAIT]})
    refused = rl.runs.start(later)
    holder = rl.runs.start(lease_spec("holder"))
    rl.runs.advance_leg("w1")
    rl.runs.advance(refused, "bea")
    for _ in range(4):
        clock.advance(60)
        rl.runs.advance_leg("w1")
    assert rl.ledger.get_run(refused).status == "aborted"
    rl.cleanup.sweep("w1")
    assert restores == []
    assert status(rl, refused) == "complete"
    assert status(rl, holder) == "pending"


def test_a_lease_step_whose_answer_was_lost_is_restored_from_its_reservation(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    restores: list[tuple[str, str, str]] = []

    def restore(
        baseline: str, expected: str, run_id: str, target: str, idempotency_key: str
    ) -> Any:
        restores.append((baseline, expected, target))
        return {"ok": True}

    registry.module("sky").lease(
        "sky",
        apply=lambda target, value, run_id, idempotency_key: {
            "ok": True,
            "baseline": "clear",
            "applied": value,
        },
        restore=restore,
    )
    spec = lease_spec("lost")
    run = rl.runs.start(spec)
    key = f"{run}:storm"
    # What a dispatch does, up to a worker dying after the world changed and before the answer
    # was ledgered: the placeholder stands, the override is applied, nothing supersedes it.
    rl.ledger.record_placeholder(run, "storm", "core", "core.lease", key)
    params = spec["phases"][0]["steps"][0]["params"]
    answer = rl.runs.core_lease.perform(params=params, idempotency_key=key, run_id=str(run))
    assert answer["ok"] is True
    rl.ledger.abort_run(run, "the worker died")
    rl.cleanup.sweep("w1")
    assert restores == [("clear", "storm", "plaza")]
    assert status(rl, run) == "complete"


# --- groups ------------------------------------------------------------------------------------


def test_a_placeholder_is_given_back_by_its_key_with_no_resources(
    rl: Runledger, world: World, clock: Clock
) -> None:
    calls: list[tuple[list[dict[str, Any]], str]] = []

    def revert(resources: list[dict[str, Any]], key: str) -> Any:
        calls.append((resources, key))
        return {"ok": True}

    world.answer("revert", SPAWN, revert)
    run = play(rl, fails("spawn"), name="lost answer")
    held = placeholder(run, "spawn")
    rl.ledger.abort_run(run, "the worker died mid-dispatch")
    rl.cleanup.sweep("w1")
    assert calls == [([], key(run))]
    assert entry(rl, held).status == "reverted"
    assert status(rl, run) == "complete"


def test_one_revert_call_gives_back_everything_one_step_made(
    rl: Runledger, world: World, clock: Clock
) -> None:
    calls: list[tuple[list[str], str]] = []

    def revert(resources: list[dict[str, Any]], key: str) -> Any:
        calls.append(([r["ref"] for r in resources], key))
        return {"ok": True}

    world.answer("revert", SPAWN, revert)
    refs = [f"c{n}" for n in range(6)]
    run = ended(rl, makes("spawn", *refs), makes("spawn-2", "d1", "d2"), name="horde")
    summaries = rl.cleanup.sweep("w1")
    k1, k2 = key(run), key(run, "spawn-2")
    assert sorted((sorted(r), k) for r, k in calls) == [(sorted(refs), k1), (["d1", "d2"], k2)]
    assert world.reverts == {k1: 1, k2: 1}
    assert (summaries[run].attempted, summaries[run].reverted) == (8, 8)
    assert status(rl, run) == "complete"


def test_each_call_writes_one_line_naming_its_resources(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = ended(rl, makes("spawn", "c1", "c2"), makes("spawn-2", "d1"), leases(), name="two steps")
    rl.cleanup.sweep("w1")
    calls = lines(rl, run, "cleanup.reverted")
    assert sorted(tuple(c.detail["resources"]) for c in calls) == [
        ("creature:c1", "creature:c2"),
        ("creature:d1",),
        ("override:weather#plaza",),
    ]
    assert {(c.detail["outcome"], c.detail["attempt"], c.detail["by"]) for c in calls} == {
        ("done", 1, "w1"),
    }


def test_a_failing_call_line_says_what_went_wrong(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, throws())
    run, _ = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    calls = lines(rl, run, "cleanup.failed")
    assert [(c.detail["attempt"], c.detail["outcome"]) for c in calls] == [
        (1, "retry"),
        (2, "retry"),
    ]
    assert all("RuntimeError" in c.detail["error"] for c in calls)


# --- which runs are swept ----------------------------------------------------------------------


def test_a_running_run_is_not_swept(rl: Runledger, world: World, clock: Clock) -> None:
    run = play(rl, makes("spawn", "c1"), leases(), name="still going")
    [c1], held = made(run, "spawn", "c1"), override(run)
    assert rl.cleanup.sweep("w1") == {}
    assert (world.reverts, world.restores) == ({}, {})
    assert (entry(rl, c1).attempts, entry(rl, held).attempts) == (0, 0)
    assert status(rl, run) == "pending"


def test_a_lease_past_its_until_is_restored_while_the_run_goes_on(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = play(rl, makes("spawn", "c1"), leases(for_s=60), name="overrun")
    [c1], held = made(run, "spawn", "c1"), override(run)
    clock.advance(59)
    rl.cleanup.sweep("w1")
    assert world.restores == {}
    clock.advance(1)
    rl.cleanup.sweep("w1")
    assert world.restores == {"plaza": 1}
    assert world.reverts == {}
    assert (entry(rl, held).status, entry(rl, c1).status) == ("reverted", "live")
    assert rl.ledger.get_run(run).status == "running"
    assert status(rl, run) == "pending"
    complete(rl, run)
    rl.cleanup.sweep("w1")
    assert (world.restores, world.reverts) == ({"plaza": 1}, {key(run): 1})
    assert status(rl, run) == "complete"


def test_cancel_without_cleanup_keeps_everything_in_the_persons_name(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = play(rl, makes("spawn", "c1", "c2"), leases(), fails("build", BUILD), name="leave it")
    ids, held, waiting = made(run, "spawn", "c1", "c2"), override(run), placeholder(run, "build")
    assert rl.ledger.cancel_run(run, "alice", cleanup=False) == 4
    rl.cleanup.sweep("w1")
    assert (world.reverts, world.restores) == ({}, {})
    rows = [entry(rl, i) for i in [*ids, held, waiting]]
    assert {(r.status, r.attempts, r.terminal) for r in rows} == {("kept", 0, False)}
    assert status(rl, run) == "complete"
    [kept] = lines(rl, run, "cleanup.kept")
    assert kept.detail == {"by": "alice", "resources": 4}
    kept_events = [
        e
        for i in [*ids, held, waiting]
        for e in rl.app.events.get(i)
        if isinstance(e, Resource.Kept)
    ]
    assert [e.by for e in kept_events] == ["alice"] * 4
    assert not [
        e
        for i in [*ids, held, waiting]
        for e in rl.app.events.get(i)
        if type(e).__name__ in ("RevertClaimed", "RevertFailed")
    ]
    ran = rl.queries.run(run, rl.clock(), 3)
    assert ran is not None and (ran.status, ran.ended_by) == ("cancelled", "alice")


def test_cancel_without_cleanup_needs_a_name(rl: Runledger, world: World, clock: Clock) -> None:
    run = play(rl, makes("spawn", "c1"), name="leave it")
    before = rl.app.recorder.max_notification_id()
    with pytest.raises(BadRequest):
        rl.ledger.cancel_run(run, "  ", cleanup=False)
    assert rl.app.recorder.max_notification_id() == before


@pytest.mark.parametrize("end", ["complete", "cancel", "abort"])
def test_every_terminal_path_with_cleanup_is_given_back(
    rl: Runledger, world: World, clock: Clock, end: str
) -> None:
    run = play(rl, makes("spawn", "c1"), leases(), name="ends")
    [c1], held = made(run, "spawn", "c1"), override(run)
    if end == "complete":
        complete(rl, run)
    elif end == "cancel":
        assert rl.ledger.cancel_run(run, "alice", cleanup=True) == 0
    else:
        rl.ledger.abort_run(run, "a step could not succeed")
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    assert (world.reverts, world.restores) == ({key(run): 1}, {"plaza": 1})
    assert (entry(rl, c1).status, entry(rl, held).status) == ("reverted", "reverted")
    assert status(rl, run) == "complete"


def test_a_run_that_never_ledgered_needs_no_cleanup(
    rl: Runledger, world: World, clock: Clock
) -> None:
    # A run that dispatched has ledgered (record before confirm): this one ends before its step.
    run = start(rl, makes("spawn", "c1"), name="quiet")
    assert status(rl, run) == "not_required"
    rl.ledger.cancel_run(run, "alice", cleanup=True)
    assert rl.cleanup.sweep("w1") == {}
    assert status(rl, run) == "not_required"


def test_an_attempt_in_flight_keeps_the_run_pending(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(max_revert_attempts=1)
    run, [c1] = ended_run(rl, ["c1"])
    seen: list[tuple[int, str]] = []

    def revert(resources: list[dict[str, Any]], key: str) -> Any:
        # The sweep's one attempt is in flight while its call is out.
        seen.append((entry(rl, c1).attempts, status(rl, run)))
        return {"ok": True}

    world.answer("revert", SPAWN, revert)
    rl.cleanup.sweep("w1")
    assert seen == [(1, "pending")]


def test_a_dead_workers_claim_is_taken_by_a_later_sweep_once_it_expires(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run, [c1] = ended_run(rl, ["c1"])
    assert claim(rl, c1, "dead", rl.clock() + timedelta(seconds=40), 3)
    rl.cleanup.sweep("w1")
    assert world.reverts == {}
    clock.advance(40)
    rl.cleanup.sweep("w1")
    assert world.reverts == {key(run): 1}
    row = entry(rl, c1)
    assert (row.status, row.attempts) == ("reverted", 2)
    assert status(rl, run) == "complete"


# --- a person asks again -----------------------------------------------------------------------


def test_manual_cleanup_resets_an_incomplete_run_and_works_it_at_once(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, throws())
    run, [c1, c2] = ended_run(rl, ["c1", "c2"])
    for _ in range(3):
        rl.cleanup.sweep("w1")
    assert status(rl, run) == "incomplete"
    world.answer("revert", SPAWN, answering({"ok": True}))
    summary = rl.cleanup.manual_cleanup(run, "bob")
    assert (summary.attempted, summary.reverted, summary.remaining, summary.by) == (2, 2, 0, "bob")
    assert world.reverts == {key(run): 4}
    assert [entry(rl, i).status for i in (c1, c2)] == ["reverted", "reverted"]
    assert [line.detail for line in lines(rl, run, "cleanup.retry")] == [
        {"by": "bob", "resources": 2},
    ]
    assert status(rl, run) == "complete"


@pytest.mark.parametrize(
    "answer",
    [{"ok": False, "retry": False, "error": "refused"}, {"drifted": True, "current": 1}],
    ids=["terminal", "drifted"],
)
def test_manual_cleanup_lifts_a_terminal_failure_or_a_drift(
    rl: Runledger, world: World, clock: Clock, answer: dict[str, Any]
) -> None:
    world.answer("revert", SPAWN, answering(answer))
    run, [c1] = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    assert status(rl, run) == "incomplete"
    world.answer("revert", SPAWN, answering({"ok": True}))
    summary = rl.cleanup.manual_cleanup(run, "bob")
    assert summary.reverted == 1
    row = entry(rl, c1)
    assert (row.status, row.attempts) == ("reverted", 1)
    assert world.reverts == {key(run): 2}
    assert status(rl, run) == "complete"


def test_manual_cleanup_that_fails_again_leaves_the_run_pending_for_the_sweep(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, throws())
    run, [c1] = ended_run(rl, ["c1"])
    for _ in range(3):
        rl.cleanup.sweep("w1")
    summary = rl.cleanup.manual_cleanup(run, "bob")
    assert (summary.failed, summary.remaining) == (1, 1)
    assert entry(rl, c1).attempts == 1
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w1")
    assert world.reverts == {key(run): 6}
    assert status(rl, run) == "incomplete"


def test_manual_cleanup_of_a_running_run_is_refused_and_writes_nothing(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = play(rl, makes("spawn", "c1"), name="still going")
    [c1] = made(run, "spawn", "c1")
    before = rl.app.recorder.max_notification_id()
    with pytest.raises(BadRequest, match="still running"):
        rl.cleanup.manual_cleanup(run, "bob")
    assert rl.app.recorder.max_notification_id() == before
    assert world.reverts == {}
    assert entry(rl, c1).status == "live"


def test_manual_cleanup_needs_a_name(rl: Runledger, world: World, clock: Clock) -> None:
    run, _ = ended_run(rl, ["c1"])
    before = rl.app.recorder.max_notification_id()
    with pytest.raises(BadRequest):
        rl.cleanup.manual_cleanup(run, " ")
    assert rl.app.recorder.max_notification_id() == before
    assert world.reverts == {}


def test_only_manual_cleanup_resets_counters(rl: Runledger, world: World, clock: Clock) -> None:
    world.answer("revert", SPAWN, throws())
    _, [c1] = ended_run(rl, ["c1"])
    for _ in range(5):
        rl.cleanup.sweep("w1")
    resets = [e for e in rl.app.events.get(c1) if type(e).__name__ == "AttemptsReset"]
    assert resets == [] and entry(rl, c1).attempts == 3


# --- the sweep's own bookkeeping ---------------------------------------------------------------


def test_each_sweep_writes_exactly_one_summary_line_per_run(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", BUILD, throws())
    run_a, _ = ended_run(rl, ["a1", "a2"])
    run_b, _ = ended_run(rl, ["b1"], action=BUILD, name="builder")
    rl.cleanup.sweep("w1")
    rl.cleanup.sweep("w2")
    a = [line.detail for line in lines(rl, run_a, "cleanup.swept")]
    b = [line.detail for line in lines(rl, run_b, "cleanup.swept")]
    assert a == [
        {"attempted": 2, "reverted": 2, "drifted": 0, "failed": 0, "remaining": 0, "by": "w1"},
    ]
    assert b == [
        {"attempted": 1, "reverted": 0, "drifted": 0, "failed": 1, "remaining": 1, "by": "w1"},
        {"attempted": 1, "reverted": 0, "drifted": 0, "failed": 1, "remaining": 1, "by": "w2"},
    ]


def test_one_runs_exception_is_logged_and_the_sweep_goes_on(
    rl: Runledger, world: World, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    bad, _ = ended_run(rl, ["b1"])
    good, [g1] = ended_run(rl, ["g1"])
    rl.projector.catch_up()
    # A storage fault stands in for any unexpected failure: one run's rows cannot be read.
    with rl.backend.transaction(commit=True) as cursor:
        cursor.execute(
            rl.backend.sql("UPDATE {rl_resources} SET payload = %s WHERE run_id = %s"),
            ["{not json", str(bad)],
        )
    with caplog.at_level(logging.ERROR, logger="runledger.cleanup"):
        summaries = rl.cleanup.sweep("w1")
    assert f"cleanup of run {bad} failed" in caplog.text
    assert good in summaries and bad not in summaries
    assert world.reverts == {key(good): 1}
    assert entry(rl, g1).status == "reverted"
    assert status(rl, good) == "complete"


def test_a_drift_whose_current_value_cannot_be_stored_still_gets_a_verdict(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, answering({"drifted": True, "current": {"a", "b"}}))
    run, [c1] = ended_run(rl, ["c1"])
    summaries = rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert run in summaries
    assert row.claim_worker is None and row.status in ("drifted", "failing")
    assert row.last_error
    assert len(lines(rl, run, "cleanup.swept")) == 1


class Unprintable:
    """An answer object whose repr fails, as a detached ORM row's can."""

    def __repr__(self) -> str:
        raise RuntimeError("instance is not bound to a session")


def test_an_answer_that_cannot_even_be_shown_is_a_retry(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, answering(Unprintable()))
    run, [c1] = ended_run(rl, ["c1"])
    summaries = rl.cleanup.sweep("w1")
    row = entry(rl, c1)
    assert run in summaries
    assert (row.status, row.terminal, row.claim_worker) == ("failing", False, None)
    assert row.last_error and SPAWN in row.last_error


def test_a_sweep_works_at_most_the_run_batch(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(cleanup_run_batch=2)
    runs = [ended_run(rl, [f"c{n}"])[0] for n in range(5)]
    sizes = [len(rl.cleanup.sweep("w1")) for _ in range(4)]
    assert sizes == [2, 2, 1, 0]
    assert world.reverts == {key(r): 1 for r in runs}
    assert {status(rl, r) for r in runs} == {"complete"}


def test_a_sweep_works_at_most_the_groups_per_run(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(cleanup_groups_per_run=2)
    run = ended(rl, *(makes(f"s{n}", f"c{n}a", f"c{n}b") for n in range(5)), name="many steps")
    calls = []
    for _ in range(3):
        rl.cleanup.sweep("w1")
        calls.append(sum(world.reverts.values()))
    assert calls == [2, 4, 5]
    assert world.reverts == {key(run, f"s{n}"): 1 for n in range(5)}
    assert status(rl, run) == "complete"

"""Issue 9: automatic attempts are spaced by a back-off, a repeated restore that finds the
baseline in place has given it back, and a pass claims each group right before its call.

On an SQLite file and on PostgreSQL; the clock is the test's.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from rich.console import Console

from runledger.application.cli.console import show_runs
from runledger.application.runledger import Runledger
from runledger.domain.backoff import Backoff
from runledger.domain.resource import Resource
from runledger.domain.step import step_of_key
from tests.support.playing import (
    GAME_SPAWN,
    SPAWN,
    Clock,
    ended,
    ended_run,
    key,
    leases,
    made,
    makes,
    override,
    phase,
    spec,
    step,
)
from tests.support.reading import entry, lines, row, status, the_step
from tests.support.world import World, answering, throws

Factory = Callable[..., Runledger]
SLOW = {"retry_delays_s": (5.0, 30.0), "retry_jitter": 0.0, "max_revert_attempts": 3}


def at(seconds: float) -> datetime:
    return datetime(2026, 12, 2, 12, 0, tzinfo=UTC) + timedelta(seconds=seconds)


def test_the_nth_failure_waits_the_nth_delay_stretched_by_at_most_the_jitter() -> None:
    rule = Backoff((5.0, 30.0, 120.0), jitter=0.2)
    assert rule.next_attempt(1, 3, at(0), 0.5) == at(5)
    assert rule.next_attempt(2, 3, at(0), 0.5) == at(30)
    assert rule.next_attempt(2, 3, at(0), 0.0) == at(24)
    latest = rule.next_attempt(2, 3, at(0), 0.999999)
    assert latest is not None and latest < at(36)
    assert rule.next_attempt(3, 3, at(0), 0.5) is None  # no attempt is left to schedule
    assert Backoff((5.0,), jitter=0).next_attempt(4, 9, at(0), 0.5) == at(5)


def test_an_entry_is_not_retryable_before_its_next_attempt() -> None:
    entry = Resource(
        run_id=UUID(int=1),
        step="s",
        kind="creature",
        ref="c1",
        module="world",
        action=SPAWN,
        idempotency_key="k",
        payload=None,
        member_key=None,
        until=None,
        at=at(0),
    )
    entry.claim_revert("w1", at(0), at(10), 3)
    entry.fail_revert("w1", 1, "retry", "busy", at(1), next_attempt_at=at(6))
    assert not entry.retryable(at(5.9), 3) and entry.retryable(at(6), 3)
    entry.claim_revert("w1", at(6), at(16), 3)
    entry.fail_revert("w1", 2, "terminal", "banned", at(7), next_attempt_at=at(40))
    assert entry.next_attempt_at is None  # a terminal failure waits for a person, not a time


def test_automatic_attempts_come_at_their_back_off_times_and_none_before(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(**SLOW)
    world.answer("revert", SPAWN, answering({"ok": False, "error": "the shard is busy"}))
    run, [c1] = ended_run(rl, ["c1"])
    start = rl.clock()
    seen = []
    for offset in (0, 4.9, 5, 34.9, 35, 500):
        clock.move_to(start + timedelta(seconds=offset))
        rl.cleanup.sweep("w1")
        found = entry(rl, c1)
        seen.append((offset, world.reverts[key(run)], found.attempts, status(rl, run)))
    assert seen == [
        (0, 1, 1, "pending"),
        (4.9, 1, 1, "pending"),
        (5, 2, 2, "pending"),
        (34.9, 2, 2, "pending"),
        (35, 3, 3, "incomplete"),
        (500, 3, 3, "incomplete"),
    ]
    assert entry(rl, c1).next_attempt is None
    # The audit replay implies what the console showed at each moment, back-off included.
    for offset, _, _, shown in seen:
        as_of = start + timedelta(seconds=offset + 0.01)
        assert rl.history.replay(run, as_of=as_of).cleanup_status == shown, offset
    failed = lines(rl, run, "cleanup.failed")
    assert [line.detail.get("next_attempt_at") for line in failed] == [
        (start + timedelta(seconds=5)).isoformat(),
        (start + timedelta(seconds=35)).isoformat(),
        None,
    ]


def test_the_next_attempt_is_shown_beside_the_entry(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(**SLOW)
    world.answer("revert", SPAWN, answering({"ok": False, "error": "the shard is busy"}))
    run, _ = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    out = io.StringIO()
    show_runs(Console(file=out, width=200), rl.answers, [run], with_log=True)
    assert (
        "creature:c1 failing, 1 attempt — the shard is busy; next attempt at "
        "2026-12-02 12:00:05 UTC" in out.getvalue()
    )


def test_a_person_asking_again_does_not_wait_for_the_back_off(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(**SLOW)
    answers = iter([{"ok": False, "error": "the shard is busy"}, {"ok": True}])
    world.answer("revert", SPAWN, lambda resources, key: next(answers))
    run, [c1] = ended_run(rl, ["c1"])
    rl.cleanup.sweep("w1")
    assert entry(rl, c1).next_attempt is not None
    summary = rl.cleanup.manual_cleanup(run, "ops")
    assert (summary.reverted, world.reverts[key(run)]) == (1, 2)
    assert (entry(rl, c1).status, status(rl, run)) == ("reverted", "complete")


def test_a_failed_step_waits_for_its_back_off_before_it_is_dispatched_again(
    opened: Callable[..., Runledger], game: World, clock: Clock
) -> None:
    rl = opened(retry_delays_s=(5.0, 30.0), retry_jitter=0.0)
    game.script("perform", GAME_SPAWN, throws("the shard is restarting"))
    run = rl.runs.start(spec(phase("only", step("boss", GAME_SPAWN))))
    runner = rl.runner("w1")
    runner.tick()
    assert len(game.keys_performed(GAME_SPAWN)) == 1
    clock.advance(4.9)
    runner.tick()
    assert len(game.keys_performed(GAME_SPAWN)) == 1
    (phase_status,) = rl.runs.describe(run)
    assert "next attempt at 12:00:05 UTC" in (phase_status.why_not_advanced or "")
    clock.advance(0.1)
    runner.tick()
    assert len(game.keys_performed(GAME_SPAWN)) == 2
    assert the_step(rl, run, "boss").state == "done"
    assert row(rl, run).status == "completed"


def test_a_restore_that_finds_the_baseline_in_place_has_given_it_back(
    rl: Runledger, world: World, clock: Clock
) -> None:
    # The first restore answered ok and its runner died before saving the verdict: the repeat
    # finds the baseline ("clear") where it expected the run's value ("storm").
    world.answer(
        "restore",
        world.lease,
        lambda baseline, expected, target: {"drifted": True, "current": "clear"},
    )
    run = ended(rl, leases(), name="weather only")
    held = override(run)
    rl.cleanup.sweep("w1")
    assert (entry(rl, held).status, status(rl, run)) == ("reverted", "complete")
    (line,) = lines(rl, run, "cleanup.reverted")
    assert line.detail["note"] == "already restored"


def test_a_drift_to_another_value_is_still_a_drift_and_a_later_ask_finds_it_restored(
    rl: Runledger, world: World, clock: Clock
) -> None:
    current = {"value": "hail"}
    world.answer(
        "restore",
        world.lease,
        lambda baseline, expected, target: {
            "drifted": True,
            "current": current["value"],
        },
    )
    run = ended(rl, leases(), name="weather only")
    held = override(run)
    rl.cleanup.sweep("w1")
    assert (entry(rl, held).status, status(rl, run)) == ("drifted", "incomplete")
    current["value"] = "clear"  # a game master put the baseline back by hand
    rl.cleanup.manual_cleanup(run, "ops")
    assert (entry(rl, held).status, status(rl, run)) == ("reverted", "complete")


def test_a_pass_claims_each_group_right_before_its_call_and_saves_its_verdict_right_after(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = ended(rl, *(makes(f"s{i}", f"c{i}") for i in range(6)), name="six groups")
    groups = {key(run, f"s{i}"): made(run, f"s{i}", f"c{i}") for i in range(6)}
    seen: dict[str, dict[str, tuple[str, int]]] = {}

    def look(resources: list[dict[str, Any]], idempotency_key: str) -> Any:
        # What the store holds while this call is out, read from the streams themselves.
        loaded = rl.cleanup.streams.load(Resource, [i for ids in groups.values() for i in ids])
        seen[idempotency_key] = {e.ref: (e.state, e.attempts) for e in loaded.values()}
        return {"ok": True}

    world.answer("revert", SPAWN, look)
    rl.cleanup.sweep("w1")
    order = [step_of_key(k) for k in seen]  # in the order of the calls
    assert len(order) == 6
    for n, step_id in enumerate(order):
        earlier = {f"c{order[i][1:]}" for i in range(n)}
        for ref, (state, attempts) in seen[key(run, step_id)].items():
            if ref == f"c{step_id[1:]}":
                assert (state, attempts) == ("live", 1), (step_id, ref)  # claimed, being called
            elif ref in earlier:
                assert (state, attempts) == ("reverted", 1), (step_id, ref)  # verdict saved
            else:
                assert (state, attempts) == ("live", 0), (step_id, ref)  # not claimed yet
    assert status(rl, run) == "complete"
    (swept,) = lines(rl, run, "cleanup.swept")
    assert (swept.detail["attempted"], swept.detail["reverted"]) == (6, 6)

"""Recording, superseding, claiming and rebuilding, on an SQLite file and on PostgreSQL.

The ledger's own calls are made here as a dispatch makes them, on runs started from a spec
whose steps the World answers (tests.support.playing).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import IntegrityError

from runledger.application.errors import BadRequest, NotFound
from runledger.application.runledger import Runledger
from runledger.application.services.leases import CORE_LEASE
from runledger.domain.errors import NotAPlaceholder, RunNotRunning
from runledger.domain.resource import Resource
from runledger.projections.backend import TABLES
from tests.support import playing
from tests.support.by_hand import claim, keep
from tests.support.playing import (
    BUILD,
    SPAWN,
    Clock,
    complete,
    ended,
    entry_of,
    fails,
    key,
    leases,
    made,
    makes,
    override,
    play,
    start,
    step,
)
from tests.support.reading import entry, written
from tests.support.world import World, answering, throws

Factory = Callable[..., Runledger]


def events_of(rl: Runledger, aggregate_id: UUID) -> list[str]:
    return [type(e).__name__ for e in rl.app.events.get(aggregate_id)]


def festival(rl: Runledger) -> UUID:
    """A running run whose one step has not been dispatched yet."""
    return start(rl, makes("spawn", "c1"))


def placeholder(rl: Runledger, run: UUID, key: str = "k1", step: str = "spawn") -> UUID:
    return rl.ledger.record_placeholder(run, step, "world", SPAWN, key)


# --- recording ---------------------------------------------------------------------------------


def test_recording_a_placeholder_twice_is_a_no_op(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    first = placeholder(rl, run)
    before = written(rl)
    assert placeholder(rl, run) == first
    assert written(rl) == before
    assert events_of(rl, first) == ["Recorded"]
    rl.projector.catch_up()
    assert [e.entry_id for e in rl.queries.entries(run)] == [first]


def test_recording_a_lease_twice_is_a_no_op(rl: Runledger, world: World, clock: Clock) -> None:
    lease = leases()
    run = play(rl, lease)
    first = override(run)
    # The dispatch's answer again, as a runner that lost the first one's save would record it.
    again = rl.runs.core_lease.perform(lease["params"], key(run, "weather"), str(run))
    assert rl.ledger.supersede(playing.placeholder(run, "weather"), again["resources"]) == [first]
    assert events_of(rl, first) == ["Recorded"]
    row = entry(rl, first)
    assert (row.kind, row.ref, row.action) == ("override", "weather#plaza", "core.lease")
    assert row.payload == {"baseline": "clear", "applied": "storm"}


def test_a_placeholder_of_another_step_or_key_is_another_entry(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    ids = {placeholder(rl, run), placeholder(rl, run, key="k2"), placeholder(rl, run, step="s2")}
    assert len(ids) == 3


@pytest.mark.parametrize("end", ["complete", "cancel", "abort"])
def test_recording_on_an_ended_run_is_refused_and_writes_nothing(
    rl: Runledger, world: World, clock: Clock, end: str
) -> None:
    run = play(rl, makes("spawn", "c1"))
    if end == "complete":
        complete(rl, run)
    elif end == "cancel":
        rl.ledger.cancel_run(run, "alice", cleanup=True)
    else:
        rl.ledger.abort_run(run, "no")
    before = written(rl)
    with pytest.raises(RunNotRunning):
        placeholder(rl, run)
    with pytest.raises(RunNotRunning):  # a lease step's dispatch records its placeholder first
        rl.ledger.record_placeholder(run, "weather", "world", CORE_LEASE, key(run, "weather"))
    assert written(rl) == before


def test_recording_on_an_unknown_run_is_not_found(rl: Runledger, clock: Clock) -> None:
    with pytest.raises(NotFound):
        placeholder(rl, uuid4())
    assert written(rl) == 0


def test_a_run_ends_only_once(rl: Runledger, world: World, clock: Clock) -> None:
    run = ended(rl, makes("spawn", "c1"))
    before = written(rl)
    for end in (
        lambda: complete(rl, run),
        lambda: rl.ledger.abort_run(run, "late"),
        lambda: rl.ledger.cancel_run(run, "alice", cleanup=False),
    ):
        with pytest.raises(RunNotRunning):
            end()
    assert written(rl) == before


# --- supersede ---------------------------------------------------------------------------------


def test_supersede_records_the_named_resources_and_retires_the_placeholder(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    before = written(rl)
    until = rl.clock() + timedelta(minutes=5)
    ids = rl.ledger.supersede(
        held,
        [
            {"kind": "creature", "ref": "c1", "payload": {"hp": 10}, "member_key": "m1"},
            {"kind": "zone", "ref": "z1", "until": until},
        ],
    )
    assert written(rl) == before + 3
    assert ids == [
        Resource.create_id(run, "spawn", "creature", "c1"),
        Resource.create_id(run, "spawn", "zone", "z1"),
    ]
    assert entry(rl, held).status == "superseded"
    c1, z1 = entry(rl, ids[0]), entry(rl, ids[1])
    assert (c1.status, c1.payload, c1.member_key, c1.action, c1.idempotency_key) == (
        "live",
        {"hp": 10},
        "m1",
        SPAWN,
        "k1",
    )
    assert (z1.until, z1.module) == (until, "world")


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "k" * 65, "ref": "c2"},
        {"kind": "creature", "ref": "r" * 191},
        {"kind": "", "ref": "c2"},
        {"kind": "creature", "ref": ""},
        {"kind": "creature"},
        {"ref": "c2"},
        {"kind": "creature", "ref": "c2", "colour": "red"},
        {"kind": "creature", "ref": "c2", "payload": "not a dict"},
        {"kind": "creature", "ref": "c2", "until": "next tuesday"},
        {"kind": 5, "ref": "c2"},
        "creature:c2",
        None,
    ],
    ids=repr,
)
def test_supersede_is_atomic_a_malformed_resource_writes_nothing(
    rl: Runledger, world: World, clock: Clock, bad: Any
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    before = written(rl)
    with pytest.raises(BadRequest):
        rl.ledger.supersede(held, [{"kind": "creature", "ref": "c1"}, bad])
    assert written(rl) == before
    assert events_of(rl, held) == ["Recorded"]
    assert entry(rl, held).status == "placeholder"
    assert [e.entry_id for e in rl.queries.entries(run)] == [held]


def test_supersede_at_the_longest_names_allowed_is_accepted(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    [long] = rl.ledger.supersede(placeholder(rl, run), [{"kind": "k" * 64, "ref": "r" * 190}])
    assert (entry(rl, long).kind, entry(rl, long).ref) == ("k" * 64, "r" * 190)


def test_supersede_twice_is_a_no_op(rl: Runledger, world: World, clock: Clock) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    named = [{"kind": "creature", "ref": "c1"}, {"kind": "creature", "ref": "c2"}]
    first = rl.ledger.supersede(held, named)
    before = written(rl)
    assert rl.ledger.supersede(held, named) == first
    assert written(rl) == before
    assert events_of(rl, held) == ["Recorded", "Superseded"]
    assert [events_of(rl, i) for i in first] == [["Recorded"], ["Recorded"]]


def test_a_dispatch_that_named_nothing_just_retires_its_placeholder(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    assert rl.ledger.supersede(held, []) == []
    assert entry(rl, held).status == "superseded"


def test_a_dispatch_that_names_one_resource_twice_records_it_once(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    twice = [{"kind": "creature", "ref": "c1"}, {"kind": "creature", "ref": "c1"}]
    ids = rl.ledger.supersede(held, twice)
    assert ids[0] == ids[1]
    assert events_of(rl, ids[0]) == ["Recorded"]
    assert entry(rl, held).status == "superseded"


def test_a_named_resource_until_without_a_timezone_is_refused(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    before = written(rl)
    with pytest.raises(BadRequest):
        rl.ledger.supersede(held, [{"kind": "zone", "ref": "z1", "until": "2026-12-02T13:00:00"}])
    assert written(rl) == before


def test_only_a_placeholder_can_be_superseded(rl: Runledger, world: World, clock: Clock) -> None:
    run = festival(rl)
    [c1] = rl.ledger.supersede(placeholder(rl, run), [{"kind": "creature", "ref": "c1"}])
    before = written(rl)
    with pytest.raises(NotAPlaceholder):
        rl.ledger.supersede(c1, [{"kind": "creature", "ref": "c9"}])
    with pytest.raises(NotFound):
        rl.ledger.supersede(uuid4(), [])
    assert written(rl) == before


def test_a_late_answer_after_the_run_ended_is_still_ledgered_and_given_back(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    rl.ledger.abort_run(run, "the phase timed out")
    [c1] = rl.ledger.supersede(held, [{"kind": "creature", "ref": "c1"}])
    rl.cleanup.sweep("w1")
    assert entry(rl, c1).status == "reverted"
    assert world.reverted_refs == {"c1": 1}


def test_a_late_answer_after_a_cancel_without_cleanup_is_kept_in_the_same_name(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = festival(rl)
    held = placeholder(rl, run)
    assert rl.ledger.cancel_run(run, "alice", cleanup=False) == 1
    [c1] = rl.ledger.supersede(held, [{"kind": "creature", "ref": "c1"}])
    assert (entry(rl, held).status, entry(rl, c1).status) == ("kept", "kept")
    assert [e.by for e in rl.app.events.get(c1) if isinstance(e, Resource.Kept)] == ["alice"]
    rl.cleanup.sweep("w1")
    assert world.reverts == {}
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), 3)
    assert row is not None and row.cleanup_status == "complete"


def test_a_late_answer_after_its_placeholder_was_given_back_is_given_back_too(
    rl: Runledger, world: World, clock: Clock
) -> None:
    calls: list[list[str]] = []

    def revert(resources: list[dict[str, Any]], idempotency_key: str) -> Any:
        calls.append([r["ref"] for r in resources])
        return {"ok": True}

    world.answer("revert", SPAWN, revert)
    run = festival(rl)
    held = placeholder(rl, run)
    rl.ledger.abort_run(run, "the phase timed out")
    rl.cleanup.sweep("w1")
    assert entry(rl, held).status == "reverted"
    [c1] = rl.ledger.supersede(held, [{"kind": "creature", "ref": "c1"}])
    rl.cleanup.sweep("w1")
    assert calls == [[], ["c1"]]
    assert entry(rl, c1).status == "reverted"


# --- claims ------------------------------------------------------------------------------------


def test_of_two_claims_on_stale_copies_exactly_one_wins(
    rl: Runledger, world: World, clock: Clock
) -> None:
    [c1] = made(ended(rl, makes("spawn", "c1")), "spawn", "c1")
    now = rl.clock()
    mine, theirs = entry_of(rl, c1), entry_of(rl, c1)
    mine.claim_revert("w1", now, now + timedelta(seconds=40), 3)
    theirs.claim_revert("w2", now, now + timedelta(seconds=40), 3)
    rl.app.save(mine)
    with pytest.raises(IntegrityError):
        rl.app.save(theirs)
    assert events_of(rl, c1) == ["Recorded", "RevertClaimed"]
    row = entry(rl, c1)
    assert (row.claim_worker, row.attempts) == ("w1", 1)


def test_a_claim_loses_to_a_live_claim_and_wins_once_it_expires(
    rl: Runledger, world: World, clock: Clock
) -> None:
    [c1] = made(play(rl, makes("spawn", "c1")), "spawn", "c1")
    expires = rl.clock() + timedelta(seconds=40)
    assert claim(rl, c1, "w1", expires, 3)
    assert not claim(rl, c1, "w2", expires, 3)
    clock.advance(40)
    assert claim(rl, c1, "w2", rl.clock() + timedelta(seconds=40), 3)
    row = entry(rl, c1)
    assert (row.claim_worker, row.attempts) == ("w2", 2)


def test_racing_claims_from_two_processes_have_exactly_one_winner(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    one, two = make_runledger(), make_runledger()
    refs = [f"c{n}" for n in range(5)]
    ids = made(play(one, makes("spawn", *refs)), "spawn", *refs)
    expires = one.clock() + timedelta(seconds=40)
    for target in ids:
        won = race(
            lambda: claim(one, target, "a", expires, 3),  # noqa: B023
            lambda: claim(two, target, "b", expires, 3),  # noqa: B023
        )
        assert sorted(won) == [False, True]
        assert events_of(one, target).count("RevertClaimed") == 1


def race(*attempts: Callable[[], bool]) -> list[bool]:
    """Run the attempts in threads released at the same instant."""
    barrier = threading.Barrier(len(attempts))
    won: list[bool] = []

    def go(attempt: Callable[[], bool]) -> None:
        barrier.wait()
        won.append(attempt())

    threads = [threading.Thread(target=go, args=(a,)) for a in attempts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return won


def test_keep_resolves_one_entry_in_a_persons_name(
    rl: Runledger, world: World, clock: Clock
) -> None:
    [c1, c2] = made(play(rl, makes("spawn", "c1", "c2")), "spawn", "c1", "c2")
    keep(rl, c1, "alice")
    assert (entry(rl, c1).status, entry(rl, c2).status) == ("kept", "live")
    assert [e.by for e in rl.app.events.get(c1) if isinstance(e, Resource.Kept)] == ["alice"]


# --- rebuild -----------------------------------------------------------------------------------

VIEWS = [table for table in TABLES if table not in ("rl_tracking", "rl_heartbeats")]
"""The view tables: rl_heartbeats is a liveness signal, never rebuilt."""


def dump(rl: Runledger) -> dict[str, list[str]]:
    """Every projection table, rows in a stable order, tracking positions included."""
    tables: dict[str, list[str]] = {}
    with rl.backend.transaction(commit=False) as cursor:
        for table in TABLES:
            cursor.execute(rl.backend.sql(f"SELECT * FROM {{{table}}}"))
            rows = [json.dumps(dict(row), sort_keys=True, default=str) for row in cursor.fetchall()]
            tables[table] = sorted(rows)
    return tables


def rebuild_from_zero(rl: Runledger) -> None:
    """Empty every view and rewind every position in one transaction, then replay."""
    with rl.backend.transaction(commit=True) as cursor:
        for table in VIEWS:
            cursor.execute(rl.backend.sql(f"DELETE FROM {{{table}}}"))
        cursor.execute(rl.backend.sql("UPDATE {rl_tracking} SET position = 0"))
    rl.projector.catch_up()


def a_busy_history(rl: Runledger, world: World, clock: Clock) -> None:
    """Every kind of event, written across many catch-ups."""
    world.answer("revert", BUILD, throws())
    world.answer(
        "restore",
        world.lease,
        lambda baseline, expected, target: (
            {"drifted": True, "current": "hail"} if target == "market" else {"ok": True}
        ),
    )
    ended(rl, makes("spawn", "c1"), leases(), name="given back")
    wall = {"kind": "wall", "ref": "w1", "payload": {"n": [1, 2]}}
    failing = play(
        rl,
        step("b", BUILD, named=[wall]),
        leases("market", for_s=30),
        fails("lost"),
        name="failing",
    )
    rl.ledger.abort_run(failing, "a step could not succeed")
    kept = play(rl, makes("spawn", "k1"), name="kept")
    rl.ledger.cancel_run(kept, "alice", cleanup=False)
    until = rl.clock() + timedelta(seconds=10)
    play(rl, makes("spawn", "z1", "z2", "z3", kind="zone", until=until), name="zones")
    rl.reconciler.expire("world", "zone", "z1")
    clock.advance(5)
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": ["z3"]}))
    rl.reconciler.reconcile_module("world")
    for _ in range(3):
        rl.cleanup.sweep("w1")
        clock.advance(1)
    rl.cleanup.manual_cleanup(failing, "bob")
    rl.projector.catch_up()


def test_a_rebuild_from_zero_equals_the_live_tables(
    rl: Runledger, world: World, clock: Clock
) -> None:
    a_busy_history(rl, world, clock)
    live = dump(rl)
    statuses = {json.loads(row)["status"] for row in live["rl_resources"]}
    assert {"reverted", "failing", "drifted", "kept", "expired", "orphaned", "superseded"} <= (
        statuses
    )
    assert len(live["rl_run_log"]) > 10
    rebuild_from_zero(rl)
    assert dump(rl) == live


def test_a_rebuild_in_many_small_pages_equals_the_live_tables(
    rl: Runledger, world: World, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_busy_history(rl, world, clock)
    live = dump(rl)
    # Pages far smaller than the history put page boundaries inside every kind of save.
    monkeypatch.setattr("runledger.projections.projector.PAGE", 7)
    assert written(rl) > 5 * 7
    rebuild_from_zero(rl)
    assert dump(rl) == live

"""Reconcile and expiry through the application, on an SQLite file and on PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

from runledger.application.bootstrap import Runledger
from runledger.application.modules.protocol import Registry
from tests.reading import entry, lines, status, wall, written
from tests.world import World

NOW = "2026-12-02 12:00:00"
SPAWN = "world.spawn"


@pytest.fixture
def clock() -> Iterator[FrozenDateTimeFactory]:
    with freeze_time(NOW) as frozen:
        yield frozen


@pytest.fixture
def world(registry: Registry) -> World:
    world = World()
    world.install(registry, SPAWN)
    return world


def zones(
    rl: Runledger,
    run: UUID,
    refs: list[str],
    *,
    until_s: float | None = None,
    action: str = SPAWN,
    key: str = "k1",
    module: str = "world",
) -> list[UUID]:
    held = rl.ledger.record_placeholder(run, "zones", module, action, key)
    until = None if until_s is None else rl.clock() + timedelta(seconds=until_s)
    return rl.ledger.supersede(held, [{"kind": "zone", "ref": r, "until": until} for r in refs])


# --- "I do not know" is never "it is gone" -----------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        None,
        "x",
        [],
        {},
        {"ok": True},
        {"ok": "yes", "in_force": []},
        {"ok": 1, "in_force": []},
        {"ok": True, "in_force": "z1"},
        {"ok": False, "in_force": []},
        {"in_force": []},
    ],
    ids=repr,
)
def test_a_reconcile_without_a_clear_answer_leaves_the_ledger_alone(
    rl: Runledger, world: World, clock: Any, answer: Any
) -> None:
    world.in_force[SPAWN] = answer
    run = rl.ledger.start_run("zones")
    ids = zones(rl, run, ["z1", "z2"])
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.unanswered, summary.orphaned, summary.expired) == (2, 2, 0, 0)
    assert written(rl) == before
    assert {entry(rl, i).status for i in ids} == {"live"}


def test_a_reconcile_that_throws_leaves_the_ledger_alone(
    rl: Runledger, registry: Registry, clock: Any
) -> None:
    def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
        raise ConnectionError("the shard is down")

    registry.module("world").action("world.flaky", reconcile=reconcile)
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], action="world.flaky")
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert summary.unanswered == 1
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_a_reconcile_that_hangs_past_its_budget_leaves_the_ledger_alone(
    rl: Runledger, registry: Registry, clock: Any
) -> None:
    def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
        time.sleep(1.0)
        return {"ok": True, "in_force": []}

    registry.module("world").action("world.slow", reconcile=reconcile, budget_ms=100)
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], action="world.slow")
    before = written(rl)
    started = wall()
    summary = rl.reconciler.reconcile_module("world")
    assert wall() - started < 0.9
    assert summary.unanswered == 1
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_an_action_without_reconcile_is_not_asked_and_nothing_changes(
    rl: Runledger, registry: Registry, clock: Any
) -> None:
    registry.module("world").action("world.mute", revert=lambda **_: {"ok": True})
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], action="world.mute")
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.unanswered) == (0, 1)
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_a_module_is_never_asked_about_another_modules_rows(
    rl: Runledger, registry: Registry, world: World, clock: Any
) -> None:
    asked: list[str] = []

    def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
        asked.append(run_id)
        return {"ok": True, "in_force": []}

    registry.module("thief").action("thief.spawn", reconcile=reconcile)
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], action="thief.spawn", module="world")
    before = written(rl)
    assert rl.reconciler.reconcile_module("thief").asked == 0
    assert rl.reconciler.reconcile_module("world").unanswered == 1
    assert asked == []
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


# --- what a clear answer settles ---------------------------------------------------------------


def test_a_missing_resource_before_its_until_is_orphaned(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": ["z1"]}
    run = rl.ledger.start_run("zones")
    z1, z2 = zones(rl, run, ["z1", "z2"], until_s=600)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.in_force, summary.orphaned, summary.expired) == (2, 1, 1, 0)
    assert (entry(rl, z1).status, entry(rl, z2).status) == ("live", "orphaned")
    assert entry(rl, z2).last_error
    [line] = lines(rl, run, "resource.orphaned")
    assert line.detail == {"module": "world", "action": SPAWN, "resource": "zone:z2"}
    assert lines(rl, run, "resource.expired") == []


def test_a_missing_resource_without_an_until_is_orphaned(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": []}
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    rl.reconciler.reconcile_module("world")
    assert entry(rl, z1).status == "orphaned"


def test_a_missing_resource_past_its_until_is_expired_not_orphaned(
    rl: Runledger, world: World, clock: FrozenDateTimeFactory
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": []}
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], until_s=60)
    clock.tick(60)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.expired, summary.orphaned) == (1, 0)
    assert entry(rl, z1).status == "expired"
    [line] = lines(rl, run, "resource.expired")
    assert line.detail == {"module": "world", "resource": "zone:z1"}
    assert lines(rl, run, "resource.orphaned") == []


def test_a_reconcile_expiry_writes_the_same_line_an_expiry_does(
    rl: Runledger, world: World, clock: FrozenDateTimeFactory
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": ["z2"]}
    run = rl.ledger.start_run("zones")
    zones(rl, run, ["z1", "z2"], until_s=60)
    clock.tick(61)
    rl.reconciler.reconcile_module("world")
    assert rl.reconciler.expire("world", "zone", "z2") == {"expired": 1}
    by_reconcile, by_expiry = lines(rl, run, "resource.expired")
    assert set(by_reconcile.detail) == set(by_expiry.detail)
    assert by_expiry.detail == {"module": "world", "resource": "zone:z2"}


def test_a_resource_still_in_force_is_left_alone(rl: Runledger, world: World, clock: Any) -> None:
    run = rl.ledger.start_run("zones")
    ids = zones(rl, run, ["z1", "z2"])
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.in_force) == (2, 2)
    assert written(rl) == before
    assert {entry(rl, i).status for i in ids} == {"live"}


def test_placeholders_and_leases_are_not_reconciled(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": []}
    run = rl.ledger.start_run("zones")
    held = rl.ledger.record_placeholder(run, "zones", "world", SPAWN, "k-open")
    lease = rl.ledger.record_lease(
        run,
        step="weather",
        module="world",
        lease_id="weather",
        target="plaza",
        baseline="clear",
        applied="storm",
        until=rl.clock() + timedelta(hours=1),
        idempotency_key="lease-plaza",
    )
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert summary.asked == 0
    assert written(rl) == before
    assert (entry(rl, held).status, entry(rl, lease).status) == ("placeholder", "live")


def test_an_orphaned_entry_is_still_given_back_by_a_later_sweep(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": []}
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    rl.reconciler.reconcile_module("world")
    rl.ledger.complete_run(run)
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    assert world.reverted_refs == {"z1": 1}
    assert entry(rl, z1).status == "reverted"
    assert status(rl, run) == "complete"


def test_a_retry_failing_entry_found_gone_is_orphaned(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.answer(SPAWN, lambda resources, key: None)
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    rl.ledger.complete_run(run)
    rl.cleanup.sweep("w1")
    assert entry(rl, z1).status == "failing"
    world.in_force[SPAWN] = {"ok": True, "in_force": []}
    assert rl.reconciler.reconcile_module("world").orphaned == 1
    assert (entry(rl, z1).status, entry(rl, z1).attempts) == ("orphaned", 1)


def test_core_boot_asks_every_module_with_live_entries(
    rl: Runledger, registry: Registry, world: World, clock: Any
) -> None:
    registry.module("other").action(
        "other.spawn", reconcile=lambda resources, run_id: {"ok": True, "in_force": []}
    )
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    [o1] = zones(rl, run, ["o1"], action="other.spawn", module="other", key="k2")
    found = rl.reconciler.reconcile_all()
    assert set(found) == {"world", "other"}
    assert (found["world"].in_force, found["other"].orphaned) == (1, 1)
    assert (entry(rl, z1).status, entry(rl, o1).status) == ("live", "orphaned")


# --- expired(kind, ref) from a module ----------------------------------------------------------


def test_an_expiry_from_the_owner_expires_its_entry_with_a_line(
    rl: Runledger, world: World, clock: Any
) -> None:
    run = rl.ledger.start_run("zones")
    z1, z2 = zones(rl, run, ["z1", "z2"], until_s=60)
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert (entry(rl, z1).status, entry(rl, z2).status) == ("expired", "live")
    [line] = lines(rl, run, "resource.expired")
    assert line.detail == {"module": "world", "resource": "zone:z1"}


def test_an_expiry_from_another_module_changes_nothing(
    rl: Runledger, world: World, clock: Any
) -> None:
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    before = written(rl)
    assert rl.reconciler.expire("other", "zone", "z1") == {"expired": 0}
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_an_expiry_of_something_already_resolved_or_unknown_changes_nothing(
    rl: Runledger, world: World, clock: Any
) -> None:
    run = rl.ledger.start_run("zones")
    zones(rl, run, ["z1"])
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    before = written(rl)
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 0}
    assert rl.reconciler.expire("world", "zone", "nope") == {"expired": 0}
    assert rl.reconciler.expire("world", "@step", "k1") == {"expired": 0}
    assert written(rl) == before


def test_an_expiry_covers_the_owners_matching_entries_in_every_run(
    rl: Runledger, world: World, clock: Any
) -> None:
    first, second = rl.ledger.start_run("a"), rl.ledger.start_run("b")
    [a] = zones(rl, first, ["shared"])
    [b] = zones(rl, second, ["shared"])
    assert rl.reconciler.expire("world", "zone", "shared") == {"expired": 2}
    assert (entry(rl, a).status, entry(rl, b).status) == ("expired", "expired")


@pytest.mark.parametrize(
    ("kind", "ref"),
    [
        ("k" * 65, "z1"),
        ("zone", "r" * 191),
        ("", "z1"),
        ("zone", ""),
        (None, "z1"),
        ("zone", None),
        (5, "z1"),
        ("zone", ["z1"]),
        ({"kind": "zone"}, "z1"),
    ],
    ids=[
        "kind-65",
        "ref-191",
        "empty-kind",
        "empty-ref",
        "none-kind",
        "none-ref",
        "int-kind",
        "list-ref",
        "dict-kind",
    ],
)
def test_a_malformed_expiry_answers_zero_and_writes_nothing(
    rl: Runledger, world: World, clock: Any, kind: Any, ref: Any
) -> None:
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    before = written(rl)
    assert rl.reconciler.expire("world", kind, ref) == {"expired": 0}
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_an_expiry_at_the_longest_names_allowed_is_accepted(
    rl: Runledger, world: World, clock: Any
) -> None:
    kind, ref = "k" * 64, "r" * 190
    run = rl.ledger.start_run("long names")
    held = rl.ledger.record_placeholder(run, "s", "world", SPAWN, "k1")
    [long] = rl.ledger.supersede(held, [{"kind": kind, "ref": ref}])
    assert rl.reconciler.expire("world", kind, ref) == {"expired": 1}
    assert entry(rl, long).status == "expired"


# --- status follows from the rows --------------------------------------------------------------


def test_a_zone_that_expires_mid_run_leaves_the_run_complete_the_moment_it_ends(
    rl: Runledger, world: World, clock: FrozenDateTimeFactory
) -> None:
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], until_s=60)
    clock.tick(60)
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert entry(rl, z1).status == "expired"
    assert status(rl, run) == "pending"
    rl.ledger.complete_run(run)
    assert status(rl, run) == "complete"
    assert rl.cleanup.sweep("w1") == {}
    assert world.reverts == {}


def test_a_zone_found_expired_by_reconcile_mid_run_needs_no_sweep(
    rl: Runledger, world: World, clock: FrozenDateTimeFactory
) -> None:
    world.in_force[SPAWN] = {"ok": True, "in_force": []}
    run = rl.ledger.start_run("zones")
    zones(rl, run, ["z1"], until_s=60)
    clock.tick(61)
    rl.reconciler.reconcile_module("world")
    rl.ledger.complete_run(run)
    assert status(rl, run) == "complete"


def test_an_incomplete_run_whose_last_unresolved_entry_expires_becomes_complete(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.answer(SPAWN, lambda resources, key: {"ok": False, "retry": False, "error": "no"})
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"], until_s=600)
    rl.ledger.complete_run(run)
    rl.cleanup.sweep("w1")
    assert status(rl, run) == "incomplete"
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert status(rl, run) == "complete"
    assert entry(rl, z1).status == "expired"


def test_a_drifted_entry_that_expires_resolves_the_run(
    rl: Runledger, world: World, clock: Any
) -> None:
    world.answer(SPAWN, lambda resources, key: {"drifted": True, "current": "someone's"})
    run = rl.ledger.start_run("zones")
    [z1] = zones(rl, run, ["z1"])
    rl.ledger.complete_run(run)
    rl.cleanup.sweep("w1")
    assert (entry(rl, z1).status, status(rl, run)) == ("drifted", "incomplete")
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert status(rl, run) == "complete"

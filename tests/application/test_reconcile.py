"""Reconcile and expiry through the application, on an SQLite file and on PostgreSQL.

Runs are started from a spec and their steps answered by the World's performs
(tests.support.playing).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from tests.support.playing import (
    SPAWN,
    Clock,
    complete,
    fails,
    key,
    leases,
    made,
    makes,
    override,
    placeholder,
    play,
    runledgers,
)
from tests.support.reading import entry, lines, status, wall, written
from tests.support.world import World, answering


def zoned(
    rl: Runledger,
    refs: list[str],
    *,
    until_s: float | None = None,
    action: str = SPAWN,
    name: str = "zones",
) -> tuple[UUID, list[UUID]]:
    """A running run whose one step, zones, made zones ``refs``; and their entries."""
    until = None if until_s is None else rl.clock() + timedelta(seconds=until_s)
    run = play(rl, makes("zones", *refs, action=action, kind="zone", until=until), name=name)
    return run, made(run, "zones", *refs, kind="zone")


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
    rl: Runledger, world: World, clock: Clock, answer: Any
) -> None:
    world.answer("reconcile", SPAWN, answering(answer))
    _, ids = zoned(rl, ["z1", "z2"])
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.unanswered, summary.orphaned, summary.expired) == (2, 2, 0, 0)
    assert written(rl) == before
    assert {entry(rl, i).status for i in ids} == {"live"}


def test_a_reconcile_that_throws_leaves_the_ledger_alone(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
        raise ConnectionError("the shard is down")

    perform = World().verb("perform", "world.flaky")
    registry.module("world").action("world.flaky", perform=perform, reconcile=reconcile)
    _, [z1] = zoned(rl, ["z1"], action="world.flaky")
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert summary.unanswered == 1
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_a_reconcile_that_hangs_past_its_budget_leaves_the_ledger_alone(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
        time.sleep(1.0)
        return {"ok": True, "in_force": []}

    perform = World().verb("perform", "world.slow")
    registry.module("world").action(
        "world.slow", perform=perform, reconcile=reconcile, budget_ms=100
    )
    _, [z1] = zoned(rl, ["z1"], action="world.slow")
    before = written(rl)
    started = wall()
    summary = rl.reconciler.reconcile_module("world")
    assert wall() - started < 0.9
    assert summary.unanswered == 1
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_an_action_without_reconcile_is_not_asked_and_nothing_changes(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    perform = World().verb("perform", "world.mute")
    registry.module("world").action("world.mute", perform=perform, revert=lambda **_: {"ok": True})
    _, [z1] = zoned(rl, ["z1"], action="world.mute")
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.unanswered) == (0, 1)
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_a_module_is_never_asked_about_another_modules_rows(
    rl: Runledger, registry: Registry, world: World, store_url: str, clock: Clock
) -> None:
    asked: list[str] = []

    def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
        asked.append(run_id)
        return {"ok": True, "in_force": []}

    registry.module("thief").action("thief.spawn", reconcile=reconcile)
    # The run was played where the world module registered thief.spawn: its rows are the world's.
    elsewhere = Registry()
    World().install(elsewhere, "thief.spawn")
    with runledgers(store_url, elsewhere, clock) as open_one:
        _, [z1] = zoned(open_one(), ["z1"], action="thief.spawn")
    before = written(rl)
    assert rl.reconciler.reconcile_module("thief").asked == 0
    assert rl.reconciler.reconcile_module("world").unanswered == 1
    assert asked == []
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


# --- what a clear answer settles ---------------------------------------------------------------


def test_a_missing_resource_before_its_until_is_orphaned(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": ["z1"]}))
    run, [z1, z2] = zoned(rl, ["z1", "z2"], until_s=600)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.in_force, summary.orphaned, summary.expired) == (2, 1, 1, 0)
    assert (entry(rl, z1).status, entry(rl, z2).status) == ("live", "orphaned")
    assert entry(rl, z2).last_error
    [line] = lines(rl, run, "resource.orphaned")
    assert line.detail == {"module": "world", "action": SPAWN, "resource": "zone:z2"}
    assert lines(rl, run, "resource.expired") == []


def test_a_missing_resource_without_an_until_is_orphaned(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": []}))
    _, [z1] = zoned(rl, ["z1"])
    rl.reconciler.reconcile_module("world")
    assert entry(rl, z1).status == "orphaned"


def test_a_missing_resource_past_its_until_is_expired_not_orphaned(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": []}))
    run, [z1] = zoned(rl, ["z1"], until_s=60)
    clock.advance(60)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.expired, summary.orphaned) == (1, 0)
    assert entry(rl, z1).status == "expired"
    [line] = lines(rl, run, "resource.expired")
    assert line.detail == {"module": "world", "resource": "zone:z1"}
    assert lines(rl, run, "resource.orphaned") == []


def test_a_reconcile_expiry_writes_the_same_line_an_expiry_does(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": ["z2"]}))
    run, _ = zoned(rl, ["z1", "z2"], until_s=60)
    clock.advance(61)
    rl.reconciler.reconcile_module("world")
    assert rl.reconciler.expire("world", "zone", "z2") == {"expired": 1}
    by_reconcile, by_expiry = lines(rl, run, "resource.expired")
    assert set(by_reconcile.detail) == set(by_expiry.detail)
    assert by_expiry.detail == {"module": "world", "resource": "zone:z2"}


def test_a_resource_still_in_force_is_left_alone(rl: Runledger, world: World, clock: Clock) -> None:
    _, ids = zoned(rl, ["z1", "z2"])
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert (summary.asked, summary.in_force) == (2, 2)
    assert written(rl) == before
    assert {entry(rl, i).status for i in ids} == {"live"}


def test_placeholders_and_leases_are_not_reconciled(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": []}))
    run = play(rl, fails("zones"), leases(), name="zones")
    held, lease = placeholder(run, "zones"), override(run)
    before = written(rl)
    summary = rl.reconciler.reconcile_module("world")
    assert summary.asked == 0
    assert written(rl) == before
    assert (entry(rl, held).status, entry(rl, lease).status) == ("placeholder", "live")


def test_an_orphaned_entry_is_still_given_back_by_a_later_sweep(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": []}))
    run, [z1] = zoned(rl, ["z1"])
    rl.reconciler.reconcile_module("world")
    complete(rl, run)
    assert status(rl, run) == "pending"
    rl.cleanup.sweep("w1")
    assert world.reverted_refs == {"z1": 1}
    assert entry(rl, z1).status == "reverted"
    assert status(rl, run) == "complete"


def test_a_retry_failing_entry_found_gone_is_orphaned(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, lambda resources, key: None)
    run, [z1] = zoned(rl, ["z1"])
    complete(rl, run)
    rl.cleanup.sweep("w1")
    assert entry(rl, z1).status == "failing"
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": []}))
    assert rl.reconciler.reconcile_module("world").orphaned == 1
    assert (entry(rl, z1).status, entry(rl, z1).attempts) == ("orphaned", 1)


def test_core_boot_asks_every_module_with_live_entries(
    rl: Runledger, registry: Registry, world: World, clock: Clock
) -> None:
    registry.module("other").action(
        "other.spawn",
        perform=World(name="other").verb("perform", "other.spawn"),
        reconcile=lambda resources, run_id: {"ok": True, "in_force": []},
    )
    others = makes("others", "o1", action="other.spawn", kind="zone")
    run = play(rl, makes("zones", "z1", kind="zone"), others, name="zones")
    [z1], [o1] = made(run, "zones", "z1", kind="zone"), made(run, "others", "o1", kind="zone")
    found = rl.reconciler.reconcile_all()
    assert set(found) == {"world", "other"}
    assert (found["world"].in_force, found["other"].orphaned) == (1, 1)
    assert (entry(rl, z1).status, entry(rl, o1).status) == ("live", "orphaned")


# --- expired(kind, ref) from a module ----------------------------------------------------------


def test_an_expiry_from_the_owner_expires_its_entry_with_a_line(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run, [z1, z2] = zoned(rl, ["z1", "z2"], until_s=60)
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert (entry(rl, z1).status, entry(rl, z2).status) == ("expired", "live")
    [line] = lines(rl, run, "resource.expired")
    assert line.detail == {"module": "world", "resource": "zone:z1"}


def test_an_expiry_from_another_module_changes_nothing(
    rl: Runledger, world: World, clock: Clock
) -> None:
    _, [z1] = zoned(rl, ["z1"])
    before = written(rl)
    assert rl.reconciler.expire("other", "zone", "z1") == {"expired": 0}
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_an_expiry_of_something_already_resolved_or_unknown_changes_nothing(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run, _ = zoned(rl, ["z1"])
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    before = written(rl)
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 0}
    assert rl.reconciler.expire("world", "zone", "nope") == {"expired": 0}
    assert rl.reconciler.expire("world", "@step", key(run, "zones")) == {"expired": 0}
    assert written(rl) == before


def test_an_expiry_covers_the_owners_matching_entries_in_every_run(
    rl: Runledger, world: World, clock: Clock
) -> None:
    _, [a] = zoned(rl, ["shared"], name="a")
    _, [b] = zoned(rl, ["shared"], name="b")
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
    rl: Runledger, world: World, clock: Clock, kind: Any, ref: Any
) -> None:
    _, [z1] = zoned(rl, ["z1"])
    before = written(rl)
    assert rl.reconciler.expire("world", kind, ref) == {"expired": 0}
    assert written(rl) == before
    assert entry(rl, z1).status == "live"


def test_an_expiry_at_the_longest_names_allowed_is_accepted(
    rl: Runledger, world: World, clock: Clock
) -> None:
    kind, ref = "k" * 64, "r" * 190
    [long] = made(play(rl, makes("s", ref, kind=kind), name="long names"), "s", ref, kind=kind)
    assert rl.reconciler.expire("world", kind, ref) == {"expired": 1}
    assert entry(rl, long).status == "expired"


# --- status follows from the rows --------------------------------------------------------------


def test_a_zone_that_expires_mid_run_leaves_the_run_complete_the_moment_it_ends(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run, [z1] = zoned(rl, ["z1"], until_s=60)
    clock.advance(60)
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert entry(rl, z1).status == "expired"
    assert status(rl, run) == "pending"
    complete(rl, run)
    assert status(rl, run) == "complete"
    assert rl.cleanup.sweep("w1") == {}
    assert world.reverts == {}


def test_a_zone_found_expired_by_reconcile_mid_run_needs_no_sweep(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": []}))
    run, _ = zoned(rl, ["z1"], until_s=60)
    clock.advance(61)
    rl.reconciler.reconcile_module("world")
    complete(rl, run)
    assert status(rl, run) == "complete"


def test_an_incomplete_run_whose_last_unresolved_entry_expires_becomes_complete(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer(
        "revert", SPAWN, lambda resources, key: {"ok": False, "retry": False, "error": "no"}
    )
    run, [z1] = zoned(rl, ["z1"], until_s=600)
    complete(rl, run)
    rl.cleanup.sweep("w1")
    assert status(rl, run) == "incomplete"
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert status(rl, run) == "complete"
    assert entry(rl, z1).status == "expired"


def test_a_drifted_entry_that_expires_resolves_the_run(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, lambda resources, key: {"drifted": True, "current": "someone's"})
    run, [z1] = zoned(rl, ["z1"])
    complete(rl, run)
    rl.cleanup.sweep("w1")
    assert (entry(rl, z1).status, status(rl, run)) == ("drifted", "incomplete")
    assert rl.reconciler.expire("world", "zone", "z1") == {"expired": 1}
    assert status(rl, run) == "complete"

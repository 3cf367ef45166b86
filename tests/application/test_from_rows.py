"""The sweep claims entries built from their projected rows (services/sweep/from_rows.py)
rather than replayed from their streams: the two must be the same entry, and a row the stream
has moved past must lose its save."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import IntegrityError

from runledger.application.runledger import Runledger
from runledger.application.services.sweep.from_rows import entry_from_row
from runledger.domain.resource import Resource
from runledger.projections.rows import EntryRow
from tests.support.by_hand import claim
from tests.support.playing import (
    SPAWN,
    Clock,
    ended_run,
    entry_of,
    fails,
    made,
    placeholder,
    play,
    step,
)
from tests.support.reading import entry
from tests.support.world import World, answering

LIBRARY_STAMPS = ("_created_on", "_modified_on", "_pending_events")


def fields(found: Resource) -> dict[str, Any]:
    return {k: v for k, v in vars(found).items() if k not in LIBRARY_STAMPS}


def assert_built_as_replayed(rl: Runledger, entry_id: UUID) -> Resource:
    built = entry_from_row(entry(rl, entry_id))
    assert fields(built) == fields(entry_of(rl, entry_id))
    assert built.version == entry_of(rl, entry_id).version
    return built


def test_an_entry_built_from_its_row_is_the_one_its_stream_replays_in_every_open_state(
    rl: Runledger, world: World, clock: Clock
) -> None:
    until = (rl.clock() + timedelta(seconds=600)).isoformat()
    payload = {"hp": 3, "tags": ["a", "b"], "at": None}
    named = [{"kind": "creature", "ref": r, "payload": payload, "until": until} for r in "123"]
    run = play(rl, step("spawn", SPAWN, named=named), fails("lost"))
    [c1, c2, c3] = made(run, "spawn", "1", "2", "3")
    assert_built_as_replayed(rl, c1)  # live, with a payload and an until
    assert_built_as_replayed(rl, placeholder(run, "lost"))  # a placeholder
    world.answer("reconcile", SPAWN, answering({"ok": True, "in_force": ["1", "3"]}))
    rl.reconciler.reconcile_module("world")
    assert entry(rl, c2).status == "orphaned"
    assert_built_as_replayed(rl, c2)  # orphaned, its reason the last error
    assert claim(rl, c3, "dead", rl.clock() + timedelta(seconds=40), 3)
    assert_built_as_replayed(rl, c3)  # under a claim
    rl.ledger.abort_run(run, "the shard went down")
    world.answer("revert", SPAWN, answering({"ok": False, "error": "the shard is busy"}))
    clock.advance(40)
    rl.cleanup.sweep("w1")
    assert entry(rl, c1).status == "failing"
    assert entry(rl, c1).next_attempt is not None
    assert_built_as_replayed(rl, c1)  # failing, waiting for its next attempt
    rl.cleanup.manual_cleanup(run, "alice")
    assert entry(rl, c1).attempts == 1
    assert_built_as_replayed(rl, c1)  # counters reset by a person, then failing again


def test_a_row_the_stream_has_moved_past_loses_its_claim(
    rl: Runledger, world: World, clock: Clock
) -> None:
    _, [c1] = ended_run(rl, ["c1"])
    stale = entry_from_row(entry(rl, c1))
    assert claim(rl, c1, "other", rl.clock() + timedelta(seconds=40), 3)
    stale.claim_revert("w1", rl.clock(), rl.clock() + timedelta(seconds=15), 3)
    with pytest.raises(IntegrityError):
        rl.app.save(stale)
    assert entry_of(rl, c1).claim_worker == "other"


def test_a_sweep_over_a_stale_row_claims_the_entry_afresh_and_gives_it_back(
    rl: Runledger, world: World, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, [c1, c2] = ended_run(rl, ["c1", "c2"])
    rows = rl.queries.retryable_pages

    def then_someone_claims(*args: Any, **kwargs: Any) -> Any:
        found = rows(*args, **kwargs)
        assert claim(rl, c1, "other", rl.clock() + timedelta(seconds=40), 3)
        clock.advance(41)  # ... and dies: its claim has expired when the sweep claims
        return found

    monkeypatch.setattr(rl.queries, "retryable_pages", then_someone_claims)
    rl.cleanup.sweep("w1")
    assert [(entry(rl, e).status, entry(rl, e).attempts) for e in (c1, c2)] == [
        ("reverted", 2),
        ("reverted", 1),
    ]


def test_a_row_read_is_the_frozen_entry_row_its_fields_make(rl: Runledger, world: World) -> None:
    """EntryRow.of fills the row in place, not through the frozen __init__: it must still be
    the same value, and still refuse an assignment."""
    run = play(rl, step("spawn", SPAWN, named=[{"kind": "creature", "ref": "1", "payload": {}}]))
    [c1] = made(run, "spawn", "1")
    read = entry(rl, c1)
    assert read == EntryRow(**vars(read))
    assert read.payload == {} and read.run_id == run
    with pytest.raises(FrozenInstanceError):
        read.status = "reverted"  # type: ignore[misc]

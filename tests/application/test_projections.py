from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

import pytest

from runledger.application.runledger import Runledger
from runledger.projections.queries import Queries
from runledger.projections.rebuild import rebuild
from runledger.projections.statements import CANDIDATES
from runledger.projections.views.resources import ResourcesView
from tests.conftest import Factory
from tests.support import by_hand
from tests.support.playing import complete, dispatch_steps, makes, start
from tests.support.reading import EVERY_VIEW
from tests.support.world import World


def dump(rl: Runledger) -> dict[str, list[tuple[Any, ...]]]:
    tables = {
        "rl_runs": "run_id",
        "rl_resources": "entry_id",
        "rl_steps": "step_key",
        "rl_run_log": "position",
    }
    found = {}
    with rl.backend.transaction(commit=False) as cursor:
        for table, key in tables.items():
            cursor.execute(rl.backend.sql(f"SELECT * FROM {{{table}}} ORDER BY {key}"))
            # sqlite3.Row iterates over values, so the keys are asked for by name
            found[table] = [tuple(row[k] for k in row.keys()) for row in cursor.fetchall()]  # noqa: SIM118
    return found


def ledger_a_run(rl: Runledger, name: str = "festival") -> UUID:
    """A completed run whose step made three things: four entries with its placeholder. Nothing
    of it is projected yet (the advance leg would catch up first)."""
    run = start(rl, makes("spawn", "c0", "c1", "c2"), name=name)
    dispatch_steps(rl, run)
    complete(rl, run)
    return run


def nothing() -> None:
    """No catch-up."""


def as_they_stand(rl: Runledger) -> Queries:
    """The views read as they stand, without catching them up first."""
    return Queries(rl.backend, fresh=nothing)


def test_a_reader_can_wait_for_a_write_another_process_made(
    make_runledger: Factory, world: World
) -> None:
    writer, reader = make_runledger(), make_runledger()
    run = ledger_a_run(writer)
    position = writer.app.recorder.max_notification_id() or 0
    standing = as_they_stand(reader)
    assert standing.run(run, reader.clock(), 3) is None
    reader.projector.wait_for(position, timeout=5)
    found = standing.run(run, reader.clock(), 3)
    assert found is not None and found.entries == 3  # the step's placeholder was replaced


def test_every_read_sees_what_was_saved_before_it_in_any_process(
    make_runledger: Factory, world: World
) -> None:
    writer, reader = make_runledger(), make_runledger()
    run = ledger_a_run(writer)
    found = reader.queries.run(run, reader.clock(), 3)
    assert found is not None and found.entries == 3
    (c0,) = [e for e in writer.queries.entries(run) if e.ref == "c0"]
    by_hand.keep(writer, c0.entry_id, "alice")
    assert reader.queries.entry(c0.entry_id) == replace(c0, status="kept", version=2)
    joined = writer.fleet.join("elsewhere", ["world"], ["world.spawn"], [])
    assert [r.runner_id for r in reader.fleet.listing(reader.clock())] == [joined]


def test_a_rebuild_from_position_zero_gives_identical_tables(rl: Runledger, world: World) -> None:
    for name in ("a", "b", "c"):
        ledger_a_run(rl, name)
    rl.projector.catch_up()
    before = dump(rl)
    assert len(before["rl_resources"]) == 12
    report = rebuild(rl.app, rl.backend)
    assert report.swapped and report.events > 0
    assert dump(rl) == before


def test_rows_and_position_commit_together_or_not_at_all(
    rl: Runledger, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger_a_run(rl)
    original = ResourcesView.process

    def fail_after_writing(self: ResourcesView, *args: Any) -> None:
        original(self, *args)
        raise OSError("the projection host lost power")  # store trouble, not the event's

    monkeypatch.setattr(ResourcesView, "process", fail_after_writing)
    with pytest.raises(OSError):
        rl.projector.catch_up()
    positions = rl.projector.positions()
    assert positions == dict.fromkeys(EVERY_VIEW, 0)
    assert dump(rl) == {"rl_runs": [], "rl_resources": [], "rl_steps": [], "rl_run_log": []}
    monkeypatch.undo()
    rl.projector.catch_up()
    assert len(dump(rl)["rl_resources"]) == 4


def test_catching_up_twice_applies_nothing_twice(make_runledger: Factory, world: World) -> None:
    first, second = make_runledger(), make_runledger()
    ledger_a_run(first)
    first.projector.catch_up()
    second.projector.catch_up()
    assert len(dump(first)["rl_run_log"]) == 3  # started, its step succeeded, completed
    assert dump(first) == dump(second)


def test_the_sweeps_candidate_query_reads_the_open_entries_index(
    rl: Runledger, world: World
) -> None:
    ledger_a_run(rl)
    rl.projector.catch_up()
    sqlite = rl.backend.placeholder() == "?"
    with rl.backend.transaction(commit=False) as cursor:
        if not sqlite:
            cursor.execute("SET LOCAL enable_seqscan = off")
        explain = "EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN "
        cursor.execute(explain + rl.backend.sql(CANDIDATES), [0.0, 3, 0.0, 0.0, 10])
        plan = " ".join(str([row[k] for k in row.keys()]) for row in cursor.fetchall())  # noqa: SIM118
    assert (
        "rl_resources_open2" in plan
        or "rl_resources_target2" in plan
        or ("rl_resources_unresolved2" in plan)
    ), plan
    assert "rl_resources_run " not in plan and "rl_resources_pkey" not in plan

"""A view folds a page from rows it already knows at the right version (views/known.py), and
reads a row back from its table whenever the one it knows is not that version."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from runledger.application.runledger import Runledger
from runledger.projections.projector import Projector
from runledger.projections.views.known import KnownRows
from runledger.projections.views.resources import ResourcesView
from tests.conftest import Factory
from tests.support.playing import Clock, ended_run, entry_of
from tests.support.world import World


def resources_view(rl: Runledger) -> ResourcesView:
    assert isinstance(rl.projector, Projector)
    [view] = [v for v in rl.projector.views if isinstance(v, ResourcesView)]
    return view


def reads_back(rl: Runledger) -> list[list[str]]:
    """The keys the resources view reads from its table, from now on."""
    view = resources_view(rl)
    calls: list[list[str]] = []
    load = view.load

    def counted(backend: Any, cursor: Any, ids: list[str]) -> Any:
        calls.append(ids)
        return load(backend, cursor, ids)

    view.load = counted  # type: ignore[method-assign]
    return calls


def test_new_entries_and_a_sweep_are_projected_without_reading_rows_back(
    rl: Runledger, world: World, clock: Clock
) -> None:
    calls = reads_back(rl)
    run, entries = ended_run(rl, ["c1", "c2", "c3"])
    rl.projector.catch_up()
    assert calls == []  # each entry's first event: there is no row yet
    rl.cleanup.sweep("w")  # reads the entries' rows, then claims and gives each back
    rl.projector.catch_up()
    assert calls == []
    assert rl.queries.unresolved_entries(run) == []
    assert {e: entry_of(rl, e).state for e in entries} == dict.fromkeys(entries, "reverted")


def test_a_row_another_projector_moved_is_read_back_before_folding(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    mine, other = make_runledger(), make_runledger()
    run, [c1] = ended_run(mine, ["c1"])
    mine.projector.catch_up()  # knows c1 at version 1
    now = mine.clock()
    entry = entry_of(other, c1)
    entry.claim_revert("w", now, now + timedelta(seconds=60), 3)
    other.app.save(entry)
    other.projector.catch_up()  # the table has c1 at version 2: claimed, attempt 1
    calls = reads_back(mine)
    entry = entry_of(mine, c1)
    entry.fail_revert("w", 1, "retry", "the gate is stuck", now, now + timedelta(seconds=5))
    mine.app.save(entry)
    mine.projector.catch_up()
    assert calls == [[str(c1)]]
    [row] = mine.queries.unresolved_entries(run)
    assert (row.status, row.attempts, row.last_error) == ("failing", 1, "the gate is stuck")


def test_a_known_row_is_used_only_at_the_version_before_the_page() -> None:
    known = KnownRows(lambda stored: stored | {"revived": True})
    known.moved({"a": {"version": 3}, "b": {"version": 5}})
    known.read("key", [{"key": "c", "version": 1}])
    assert known.take({"a": 4, "b": 5, "c": 2, "d": 1}) == {
        "a": {"version": 3},
        "c": {"key": "c", "version": 1, "revived": True},
    }
    assert known.take({"a": 4, "b": 6}) == {}  # taken out: a page remembers what it leaves


def test_a_row_taken_is_a_copy_and_the_least_recently_seen_are_forgotten() -> None:
    known = KnownRows(lambda stored: stored, size=2)
    row = {"version": 1}
    known.moved({"a": row})
    taken = known.take({"a": 2})
    taken["a"]["version"] = 99
    assert row == {"version": 1}
    known.moved({"a": {"version": 2}, "b": {"version": 1}})
    known.read("key", [{"key": "c", "version": 1}])
    assert known.take({"a": 3, "b": 2, "c": 2}) == {
        "b": {"version": 1},
        "c": {"key": "c", "version": 1},
    }

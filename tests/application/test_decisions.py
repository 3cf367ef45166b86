"""SPEC "A person decides", on an SQLite file and on PostgreSQL: an unresolved entry of an ended
run is kept with a reason in the person's name, or retried alone; "keep what is left" keeps every
one. A drift a person accepts leaves "needs a person". Every test reads the game's own values
(the world), not only the ledger.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import BadRequest, Conflict, NotFound
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.errors import NotClaimable
from runledger.domain.resource import LEASE_KIND
from runledger.domain.values import MAX_TEXT, UnsafeValue
from runledger.projections.queries import EntryRow
from tests.support.by_hand import claim
from tests.support.fixtures.make_legacy_store import FESTIVAL, FIXTURE
from tests.support.playing import Clock, entry_of, lease_step, phase, spec
from tests.support.reading import entry, lines, row, status, tick, written
from tests.support.world import LEASE, World

Opener = Callable[..., Runledger]
WHY = "the game master's weather stays for the festival"


@pytest.fixture
def rl(opened: Opener) -> Runledger:
    return opened()


def leases(rl: Runledger, run: UUID) -> dict[str, EntryRow]:
    """The run's lease entries by target."""
    rl.projector.catch_up()
    found = [e for e in rl.queries.entries(run) if e.kind == LEASE_KIND]
    return {e.ref.partition("#")[2]: e for e in found}


def drifted(
    rl: Runledger, game: World, name: str = "storms", master: tuple[str, str] = ("hail", "sleet")
) -> UUID:
    """A run that set storm on north and east; a game master changed both while it held them,
    so its restores, once it ended, left both as they were (drifted): it needs a person."""
    north, east = lease_step("north", "north"), lease_step("east", "east")
    run = rl.runs.start(spec(phase("p1", north, east, advance="manual"), name=name))
    tick(rl)
    assert game.values["north"] == game.values["east"] == "storm"
    game.values.update(north=master[0], east=master[1])  # a game master
    assert rl.runs.advance(run, "alice") == "completed"
    tick(rl)
    assert {t: e.status for t, e in leases(rl, run).items()} == {
        "north": "drifted",
        "east": "drifted",
    }
    assert status(rl, run) == "incomplete"
    return run


# --- keep one entry ------------------------------------------------------------------------------


def test_keeping_each_drifted_entry_makes_the_run_leave_needs_a_person(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    found = leases(rl, run)
    restores = len(game.restore_calls)
    kept = rl.decisions.keep_one(run, found["north"].entry_id, "bob", WHY)
    assert kept.entries == {found["north"].entry_id: found["north"].name}
    assert (kept.by, kept.reason) == ("bob", WHY)
    assert status(rl, run) == "incomplete"  # east still drifted
    rl.decisions.keep_one(run, found["east"].entry_id, "carol", "sleet is fine")
    assert status(rl, run) == "complete"
    assert row(rl, run).unresolved == 0
    # Nothing was asked of the world: the game master's values stand.
    assert game.values == {"north": "hail", "east": "sleet"}
    assert len(game.restore_calls) == restores
    north = entry_of(rl, found["north"].entry_id)
    assert (north.state, north.kept_by, north.kept_reason) == ("kept", "bob", WHY)
    assert [line.detail for line in lines(rl, run, "cleanup.kept_one")] == [
        {"by": "bob", "reason": WHY, "entry": found["north"].name},
        {"by": "carol", "reason": "sleet is fine", "entry": found["east"].name},
    ]


def test_a_kept_entry_s_history_and_replay_say_who_and_why(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    north = leases(rl, run)["north"]
    rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    last = rl.history.step(north.entry_id).frames[-1]
    assert (last.event, last.actor, last.state["kept_reason"]) == ("Kept", "bob", WHY)
    assert last.changed["kept_reason"] == (None, WHY)
    [replayed] = [x for x in rl.history.replay(run).lines if x.event == "Kept"]
    assert (replayed.actor, replayed.outcome) == ("bob", f"kept: {WHY}")


def test_keeping_one_entry_is_refused_while_the_run_runs_and_names_it(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = rl.runs.start(spec(phase("p1", lease_step("north", "north"), advance="manual")))
    tick(rl)
    north = leases(rl, run)["north"]
    before = written(rl)
    with pytest.raises(Conflict, match=f"run festival \\({run}\\) is still running"):
        rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    with pytest.raises(Conflict, match="still running"):
        rl.decisions.retry_one(run, north.entry_id, "bob")
    with pytest.raises(Conflict, match="still running"):
        rl.decisions.keep_rest(run, "bob", WHY)
    assert written(rl) == before
    assert entry(rl, north.entry_id).status == "live"


def test_an_entry_already_resolved_is_refused_and_nothing_is_written(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    north = leases(rl, run)["north"]
    rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    before = written(rl)
    with pytest.raises(Conflict, match=f"{north.name} is already kept"):
        rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    with pytest.raises(Conflict, match="already kept"):
        rl.decisions.retry_one(run, north.entry_id, "bob")
    assert written(rl) == before


def test_an_entry_of_another_run_is_not_found(rl: Runledger, game: World, clock: Clock) -> None:
    run = drifted(rl, game)
    other = drifted(rl, game, name="other", master=("fog", "mist"))
    with pytest.raises(NotFound, match=f"run {run} has no entry"):
        rl.decisions.keep_one(run, leases(rl, other)["north"].entry_id, "bob", WHY)


@pytest.mark.parametrize(
    ("by", "why", "field"),
    [
        ("bob", "", "reason"),
        ("bob", "   ", "reason"),
        ("bob", "a\x00b", "reason"),
        ("bob", "x" * (MAX_TEXT + 1), "reason"),
        ("", WHY, "by"),
        ("b\x00b", WHY, "by"),
    ],
    ids=["empty", "blank", "nul", "too-long", "no-one", "nul-name"],
)
def test_a_bad_reason_or_name_is_refused_naming_the_field(
    rl: Runledger, game: World, clock: Clock, by: str, why: str, field: str
) -> None:
    run = drifted(rl, game)
    north = leases(rl, run)["north"]
    before = written(rl)
    acts: list[Callable[[], object]] = [
        lambda: rl.decisions.keep_one(run, north.entry_id, by, why),
        lambda: rl.decisions.keep_rest(run, by, why),
    ]
    for act in acts:
        with pytest.raises((UnsafeValue, BadRequest)) as refused:
            act()
        said = str(refused.value)
        assert said.startswith(f"{field}:") or (field == "by" and "name of the person" in said)
    assert written(rl) == before
    assert status(rl, run) == "incomplete"


def test_an_entry_under_a_live_claim_is_not_kept(rl: Runledger, game: World, clock: Clock) -> None:
    run = drifted(rl, game)
    north = leases(rl, run)["north"]
    reopened = entry_of(rl, north.entry_id)
    reopened.reset_attempts("ops", rl.clock())  # as a person's retry does, then a worker dies
    rl.app.save(reopened)
    assert claim(rl, north.entry_id, "dead", rl.clock() + timedelta(seconds=40), 3)
    before = written(rl)
    with pytest.raises(Conflict, match="is being given back by dead"):
        rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    with pytest.raises(Conflict, match="is being given back by dead"):
        rl.decisions.keep_rest(run, "bob", WHY)
    assert written(rl) == before
    with pytest.raises(NotClaimable):  # the domain's own guard
        entry_of(rl, north.entry_id).keep("bob", rl.clock(), WHY)
    clock.advance(60)  # the claim has expired: keeping is a person's call again
    rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    assert entry(rl, north.entry_id).status == "kept"


# --- keep what is left ---------------------------------------------------------------------------


def test_keeping_what_is_left_keeps_every_unresolved_entry_with_one_reason(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    found = leases(rl, run)
    kept = rl.decisions.keep_rest(run, "bob", WHY)
    assert kept.entries == {e.entry_id: e.name for e in found.values()}
    assert status(rl, run) == "complete"
    assert game.values == {"north": "hail", "east": "sleet"}
    for e in found.values():
        aggregate = entry_of(rl, e.entry_id)
        assert (aggregate.state, aggregate.kept_by, aggregate.kept_reason) == ("kept", "bob", WHY)
    assert [line.detail for line in lines(rl, run, "cleanup.kept_rest")] == [
        {"by": "bob", "reason": WHY, "resources": 2}
    ]
    with pytest.raises(Conflict, match="has nothing left to keep"):
        rl.decisions.keep_rest(run, "bob", WHY)


# --- retry one entry -----------------------------------------------------------------------------


def test_retrying_one_entry_gives_it_back_in_the_world_and_leaves_the_others_alone(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    found = leases(rl, run)
    game.values["north"] = "storm"  # the game master gives north back to the run
    asked = [r["target"] for r in game.restore_calls]
    retried = rl.decisions.retry_one(run, found["north"].entry_id, "bob", "north is ours again")
    assert game.values == {"north": "clear", "east": "sleet"}  # north's baseline is back
    assert [r["target"] for r in game.restore_calls] == [*asked, "north"]  # east was not asked
    assert (retried.name, retried.retried.attempted, retried.retried.reverted) == (
        found["north"].name,
        1,
        1,
    )
    assert retried.retried.held == []
    assert entry(rl, found["north"].entry_id).status == "reverted"
    assert (
        entry(rl, found["east"].entry_id).status,
        entry(rl, found["east"].entry_id).attempts,
    ) == (
        "drifted",
        1,
    )
    assert [line.detail for line in lines(rl, run, "cleanup.retry_one")] == [
        {"by": "bob", "reason": "north is ours again", "entry": found["north"].name}
    ]
    resets = [
        e for e in rl.app.events.get(found["east"].entry_id) if type(e).__name__ == "AttemptsReset"
    ]
    assert resets == []
    assert status(rl, run) == "incomplete"
    rl.decisions.keep_one(run, found["east"].entry_id, "bob", WHY)
    assert status(rl, run) == "complete"


def test_a_retry_that_finds_the_drift_again_leaves_it_drifted(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    north = leases(rl, run)["north"]
    retried = rl.decisions.retry_one(run, north.entry_id, "bob")
    assert (retried.retried.attempted, retried.retried.drifted) == (1, 1)
    assert game.values == {"north": "hail", "east": "sleet"}
    assert (entry(rl, north.entry_id).status, entry(rl, north.entry_id).attempts) == ("drifted", 1)
    assert [line.detail for line in lines(rl, run, "cleanup.retry_one")] == [
        {"by": "bob", "entry": north.name}
    ]


def test_a_retry_leaves_a_lease_another_live_run_holds_alone_and_says_why(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = drifted(rl, game)
    north = leases(rl, run)["north"]
    clock.advance(60)
    holder = rl.runs.start(
        spec(phase("p1", lease_step("fog", "north", "fog"), advance="manual"), name="fog")
    )
    tick(rl)
    assert game.values["north"] == "fog"
    restores = len(game.restore_calls)
    retried = rl.decisions.retry_one(run, north.entry_id, "bob", "try again")
    said = f"north is held by run {holder} until 2026-12-02 13:01:00 UTC: not restored"
    [held] = retried.retried.held
    assert (held.entry_id, held.holder, held.said) == (north.entry_id, holder, said)
    assert retried.retried.attempted == 0
    assert game.values == {"north": "fog", "east": "sleet"}  # the holder's fog stands
    assert len(game.restore_calls) == restores
    after = entry(rl, north.entry_id)
    assert (after.status, after.attempts) == ("drifted", 1)  # not reset, not claimed
    assert [line.detail for line in lines(rl, run, "cleanup.retry_one")] == [
        {"by": "bob", "reason": "try again", "entry": north.name, "held": said}
    ]
    # Keeping it is still the person's to decide: it asks nothing of the world.
    rl.decisions.keep_one(run, north.entry_id, "bob", WHY)
    assert game.values["north"] == "fog"
    assert rl.runs.advance(holder, "alice") == "completed"
    tick(rl)
    assert game.values["north"] == "hail"  # the holder's own restore put back what it found


def test_cancelling_without_cleanup_still_keeps_everything_in_the_person_s_name(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = rl.runs.start(spec(phase("p1", lease_step("north", "north"), advance="manual")))
    tick(rl)
    assert rl.ledger.cancel_run(run, "alice", cleanup=False) == 1
    north = entry_of(rl, leases(rl, run)["north"].entry_id)
    assert (north.state, north.kept_by, north.kept_reason) == ("kept", "alice", None)
    assert game.values == {"north": "storm"}
    assert LEASE in leases(rl, run)["north"].ref


# --- a store written before keeping had a reason -------------------------------------------------


def test_a_kept_entry_stored_without_a_reason_still_loads_and_reads(tmp_path: Path) -> None:
    copy = tmp_path / "legacy.sqlite3"
    shutil.copyfile(FIXTURE, copy)
    with sqlite3.connect(copy) as db:
        stored = [
            (UUID(hex=i), json.loads(state))
            for i, state in db.execute(
                "SELECT originator_id, state FROM stored_events WHERE topic LIKE '%Resource.Kept'"
            )
        ]
    assert stored and all("reason" not in state for _, state in stored)
    url = f"sqlite:///{copy}"
    init_store(Settings(database_url=url))
    with bootstrap(Settings(database_url=url), Registry()) as old:
        for entry_id, state in stored:
            found = entry_of(old, entry_id)
            assert (found.state, found.kept_by, found.kept_reason) == ("kept", state["by"], None)
            shown = old.answers.known_entry(entry_id)
            assert (shown.kept_by, shown.kept_reason) == (state["by"], None)
            last = old.history.step(entry_id).frames[-1]
            assert (last.event, last.state["kept_reason"]) == ("Kept", None)
        replayed = old.history.replay(FESTIVAL)
        assert [x.outcome for x in replayed.lines if x.event == "Kept"] == ["kept"]


def test_cancelling_without_cleanup_leaves_a_lease_whose_restore_is_out_to_that_call(
    rl: Runledger, game: World, clock: Clock
) -> None:
    run = rl.runs.start(spec(phase("p1", lease_step("north", "north"), advance="manual")))
    tick(rl)
    north = leases(rl, run)["north"]
    # The sweep took the lease at its deadline and its worker died before any verdict.
    assert claim(rl, north.entry_id, "dead", rl.clock() + timedelta(seconds=40), 3)
    assert rl.ledger.cancel_run(run, "alice", cleanup=False) == 0
    out = entry_of(rl, north.entry_id)
    assert (out.state, out.claim_worker, out.kept_by) == ("live", "dead", None)
    clock.advance(60)  # the claim lapses: the ended run's lease is given back like any other
    tick(rl)
    assert entry(rl, north.entry_id).status == "reverted"
    assert game.values == {"north": "clear"}

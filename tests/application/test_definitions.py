"""Definitions (W5) through the services, on SQLite and PostgreSQL: the verified stamp in every
combination, re-pinning, and a dry run that changes nothing anywhere."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from runledger.application.errors import BadRequest, Conflict, NotFound
from runledger.application.runledger import Runledger
from runledger.application.services import dry_run
from runledger.domain.definition import NothingPublished, Stamp
from runledger.domain.occurrence import Occurrence
from tests.support.definitions_support import (
    Fair,
    fair_fixture,
    fair_rl_fixture,
    fair_spec,
    phase,
    schedule,
    stall,
    verified_and_published,
)
from tests.support.playing import Clock
from tests.support.reading import tick, wall, written

__all__ = ["fair_fixture", "fair_rl_fixture"]


def pinned(rl: Runledger, occurrence_id: UUID) -> tuple[int, Stamp | None, str]:
    found = rl.occurrences.get(occurrence_id)
    return found.pinned_version, found.verified, found.state


def test_verify_then_publish_stamps_the_version_with_that_reviewer_and_time(
    rl: Runledger, clock: Clock
) -> None:
    rl.definitions.create("fair", fair_spec(), "ann")
    clock.advance(60)
    dry = rl.definitions.verify("fair", "rita")
    assert (dry.passed, dry.by, dry.at) == (True, "rita", clock.now)
    verified_at = clock.now
    clock.advance(60)
    published = rl.definitions.publish("fair", "paul")
    assert published.version.number == 1
    assert published.version.verified == Stamp("rita", verified_at)
    assert published.version.fingerprint == dry.fingerprint
    [row] = rl.definitions.listing()
    assert (row.versions, row.latest_verified) == (1, Stamp("rita", verified_at))


def test_an_edit_after_verify_publishes_unverified(rl: Runledger, clock: Clock) -> None:
    rl.definitions.create("fair", fair_spec(), "ann")
    rl.definitions.verify("fair", "rita")
    _, changed = rl.definitions.edit("fair", fair_spec(phase("open", stall(count=3))), "ann")
    assert changed
    [row] = rl.definitions.listing()
    assert row.draft_verified is None and row.last_dry_run_passed is True
    published = rl.definitions.publish("fair", "paul")
    assert published.version.verified is None
    rl.definitions.verify("fair", "vic")
    assert rl.definitions.publish("fair", "paul").version.verified == Stamp("vic", clock.now)


def test_verify_with_problems_verifies_nothing_and_names_each_field(rl: Runledger) -> None:
    bad = fair_spec(
        phase("open", stall(), stall("zero", count=0), stall("dragons", kind="dragon")),
        phase("close", {"id": "ghost", "action": "fair.ghost"}, advance="manual", after_s=30),
    )
    rl.definitions.create("fair", bad, "ann")
    dry = rl.definitions.verify("fair", "rita")
    assert list(dry.problems) == [
        "phases.0.steps.1.params.count: must be at least 1",
        "phases.0.steps.2.params.kind: no stall may sell dragons",
        "phases.1.after_s: a manual phase waits for a person, not 30s; make it auto or drop "
        "after_s",
        'phases.1.steps.0.action: no module registers "fair.ghost"',
    ]
    assert rl.definitions.publish("fair", "paul").version.verified is None
    [row] = rl.definitions.listing()
    assert (row.dry_runs, row.last_dry_run_passed, row.draft_verified) == (1, False, None)


def test_two_definitions_dry_runs_interleaved_each_vouch_for_their_own_draft(
    rl: Runledger, clock: Clock
) -> None:
    rl.definitions.create("fair", fair_spec(), "ann")
    rl.definitions.create("market", fair_spec(name="Market"), "bob")
    rl.definitions.verify("fair", "rita")
    fair_verified = clock.now
    clock.advance(10)
    rl.definitions.edit("market", fair_spec(phase("open", stall(count=2)), name="M"), "bob")
    rl.definitions.verify("market", "vic")
    market_verified = clock.now
    clock.advance(10)
    rl.definitions.edit("fair", fair_spec(phase("open", stall(count=7))), "ann")
    clock.advance(10)
    assert rl.definitions.publish("market", "paul").version.verified == Stamp(
        "vic", market_verified
    )
    assert rl.definitions.publish("fair", "paul").version.verified is None
    rl.definitions.edit("fair", fair_spec(), "ann")  # back to what rita verified: still an edit
    assert rl.definitions.publish("fair", "paul").version.verified is None
    assert fair_verified < market_verified


def test_publish_repins_only_the_not_yet_started_occurrences_of_that_definition(
    rl: Runledger, clock: Clock
) -> None:
    verified_and_published(rl, "fair", fair_spec())
    verified_and_published(rl, "market", fair_spec(name="Market"))
    first_stamp = rl.definitions.get("fair").versions[0].verified
    started = schedule(rl, "fair", 60)
    waiting = schedule(rl, "fair", 3600)
    cancelled = schedule(rl, "fair", 3600)
    elsewhere = schedule(rl, "market", 3600)
    rl.occurrences.cancel(cancelled, "sam")
    clock.advance(120)
    assert tick(rl).started.started != []
    rl.definitions.edit("fair", fair_spec(phase("open", stall(count=2))), "ann")
    rl.definitions.verify("fair", "vic")
    verified_at = clock.now

    published = rl.definitions.publish("fair", "paul")

    assert published.repinned == [waiting]
    assert pinned(rl, waiting) == (2, Stamp("vic", verified_at), "scheduled")
    assert pinned(rl, started) == (1, first_stamp, "started")
    assert pinned(rl, cancelled) == (1, first_stamp, "cancelled")
    assert pinned(rl, elsewhere)[:2] == (1, rl.definitions.get("market").versions[0].verified)
    rl.definitions.edit("fair", fair_spec(phase("open", stall(count=3))), "ann")
    assert rl.definitions.publish("fair", "paul").repinned == [waiting]
    assert pinned(rl, waiting) == (3, None, "scheduled")
    rows = {r.occurrence_id: r for r in rl.occurrences.listing("fair")}
    assert (rows[waiting].version, rows[waiting].verified) == (3, None)


def test_a_dry_run_calls_nothing_that_changes_a_world_and_writes_only_its_record(
    rl: Runledger, fair: Fair
) -> None:
    spec = fair_spec(
        phase("open", stall(), {"id": "plain", "action": "fair.plain", "params": {"x": 1}}),
        phase("lit", {"id": "lights", "action": "core.lease", "params": lights_params()}),
    )
    rl.definitions.create("fair", spec, "ann")
    before = written(rl)
    for _ in range(3):
        assert rl.definitions.verify("fair", "rita").passed
    assert fair.world_calls == 0 and fair.calls["check"] == 3
    assert fair.stalls == {} and fair.lights == {}
    events = rl.app.events.get(rl.definitions.get("fair").id, gt=1)
    assert [type(e).__name__ for e in events] == ["DryRunRecorded"] * 3
    assert written(rl) == before + 3


def lights_params(target: str = "square", duration_s: float = 600) -> dict[str, object]:
    return {"lease": "fair.lights", "target": target, "value": "on", "duration_s": duration_s}


def test_a_check_that_fails_or_answers_garbage_is_a_problem_naming_the_action(
    rl: Runledger, fair: Fair
) -> None:
    rl.definitions.create("fair", fair_spec(), "ann")
    fair.check_answer = RuntimeError("<script>alert(1)</script>")
    [raised] = rl.definitions.verify("fair", "rita").problems
    assert raised.startswith('phases.0.steps.0.action: the dry-run check of "fair.stall" failed')
    fair.check_answer = {"ok": "yes"}
    [garbage] = rl.definitions.verify("fair", "rita").problems
    assert "answered what core cannot read" in garbage
    fair.check_answer = ["a sentence\x00with a NUL"]
    [said] = rl.definitions.verify("fair", "rita").problems
    assert said == "phases.0.steps.0.params: a sentence\\x00with a NUL"
    assert fair.world_calls == 0


def test_lease_steps_are_checked_for_registration_bound_and_their_own_overlap(
    rl: Runledger,
) -> None:
    spec = fair_spec(
        phase(
            "open",
            {"id": "a", "action": "core.lease", "params": lights_params(duration_s=10**9)},
            {"id": "b", "action": "core.lease", "params": {**lights_params(), "lease": "x.y"}},
            {"id": "c", "action": "core.lease", "params": {"lease": "fair.lights"}},
        ),
        phase("later", {"id": "d", "action": "core.lease", "params": lights_params()}),
    )
    rl.definitions.create("fair", spec, "ann")
    problems = list(rl.definitions.verify("fair", "rita").problems)
    assert problems[0] == (
        "phases.0.steps.0.params.duration_s: a lease may last at most 86400s "
        "(EVENT_LEASE_MAX_S); 1e+09s was asked"
    )
    assert problems[1] == 'phases.0.steps.1.params.lease: no module registers the lease "x.y"'
    assert problems[2:5] == [
        "phases.0.steps.2.params.target: is required",
        "phases.0.steps.2.params.value: is required",
        "phases.0.steps.2.params.duration_s: is required",
    ]
    assert problems[5].startswith(
        "phases.1.steps.0.params.target: 'square' (fair.lights) is still held by this spec's "
        "own step phases.0.steps.0"
    )
    assert len(problems) == 6


def test_a_target_another_run_holds_over_an_occurrence_s_window_is_a_problem(
    rl: Runledger, clock: Clock
) -> None:
    taking = {"id": "l", "action": "core.lease", "params": lights_params()}
    holder = rl.runs.start(fair_spec(phase("hold", taking, advance="manual")))
    tick(rl)  # the lease is taken: square is held for 600s
    spec = fair_spec(phase("lit", {"id": "l", "action": "core.lease", "params": lights_params()}))
    verified_and_published(rl, "fair", spec)
    said = rl.definitions.get("fair").dry_runs[-1].problems
    assert len(said) == 1 and f"held by run {holder}" in said[0]
    assert "over the window of a run starting now" in said[0]
    schedule(rl, "fair", 3600)  # an occurrence after the hold ends: nothing in its way
    assert rl.definitions.verify("fair", "rita").passed
    schedule(rl, "fair", 300)  # one inside it
    [inside] = rl.definitions.verify("fair", "rita").problems
    assert "over the window of a run starting at " in inside


def test_an_action_a_live_runner_elsewhere_serves_is_registered_enough(
    rl: Runledger,
) -> None:
    rl.fleet.join("far", ["far"], ["far.away"], [])
    spec = fair_spec(phase("p", {"id": "s", "action": "far.away", "params": {"n": 1}}))
    rl.definitions.create("fair", spec, "ann")
    assert rl.definitions.verify("fair", "rita").passed


def test_authoring_refusals_name_the_field_and_write_nothing(rl: Runledger) -> None:
    before = written(rl)
    with pytest.raises(
        BadRequest, match=r"^spec\.phases\.0\.steps\.0\.id: must be a letter or digit"
    ):
        rl.definitions.create("fair", fair_spec(phase("p", stall("bad id"))), "ann")
    with pytest.raises(BadRequest, match=r"^name: '../etc' is not a definition name"):
        rl.definitions.create("../etc", fair_spec(), "ann")
    with pytest.raises(BadRequest, match=r"^spec: the spec is not valid JSON"):
        rl.definitions.create("fair", "{", "ann")
    with pytest.raises(BadRequest, match="needs the name of the person"):
        rl.definitions.create("fair", fair_spec(), " ")
    assert written(rl) == before
    rl.definitions.create("fair", fair_spec(), "ann")
    with pytest.raises(Conflict, match="a definition named fair already exists"):
        rl.definitions.create("fair", fair_spec(), "bob")
    with pytest.raises(NotFound):
        rl.definitions.verify("fête", "rita")
    with pytest.raises(NothingPublished):
        schedule(rl, "fair", 60)
    with pytest.raises(NotFound, match="no version 1"):
        rl.definitions.version("fair", 1)


def test_the_repinned_occurrences_events_say_who_published(rl: Runledger) -> None:
    verified_and_published(rl, "fair", fair_spec())
    waiting = schedule(rl, "fair", 600)
    rl.definitions.publish("fair", "paul")
    [repinned] = [e for e in rl.app.events.get(waiting) if isinstance(e, Occurrence.Repinned)]
    assert (repinned.version, repinned.by) == (2, "paul")


def test_checks_that_hang_cost_a_dry_run_its_bound_and_not_more(
    make_runledger: Callable[..., Runledger], fair: Fair, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dry_run, "CHECK_BUDGET_S", 0.2)
    monkeypatch.setattr(dry_run, "TOTAL_BUDGET_S", 0.5)
    fair.check_sleep_s = 5
    rl = make_runledger()  # the real clock: the bound is on the wall's time
    spec = fair_spec(phase("open", *(stall(f"s{i}") for i in range(6))))
    rl.definitions.create("fair", spec, "ann")
    started = wall()
    problems = rl.definitions.verify("fair", "rita").problems
    assert wall() - started < 2
    assert problems[0].endswith('the dry-run check of "fair.stall" did not answer within 0.2s')
    assert problems[-1] == (
        "phases.0.steps.5.action: not checked: the dry run's 0.5s for module checks ran out "
        "before this step"
    )
    assert len(problems) == 6 and fair.world_calls == 0

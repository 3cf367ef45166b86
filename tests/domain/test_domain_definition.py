"""The W5 rule and the occurrence's life, on the aggregates alone: given events, when a command,
then events or an error. No store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runledger.application.services.definitions import draft_spec
from runledger.domain.definition import (
    Definition,
    DraftChanged,
    NothingPublished,
    Stamp,
    fingerprint,
)
from runledger.domain.occurrence import AlreadyStarted, NotDue, Occurrence, OccurrenceNotScheduled
from runledger.domain.occurrence import run_id_for as run_of

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def spec(count: int = 1) -> dict[str, Any]:
    step = {"id": "s", "action": "fair.stall", "params": {"count": count}}
    return draft_spec({"name": "fair", "phases": [{"id": "p", "steps": [step]}]})


def created(count: int = 1) -> Definition:
    return Definition.create("fair", spec(count), "ann", at(0))


def test_a_version_published_after_a_passing_dry_run_is_verified_with_its_reviewer_and_time() -> (
    None
):
    d = created()
    d.record_dry_run(d.fingerprint, [], "rita", at(1))
    version = d.publish("paul", at(2))
    assert (version.number, version.verified) == (1, Stamp("rita", at(1)))
    assert (version.by, version.at, version.fingerprint) == ("paul", at(2), d.fingerprint)


def test_an_edit_after_the_dry_run_leaves_the_next_version_unverified() -> None:
    d = created()
    d.record_dry_run(d.fingerprint, [], "rita", at(1))
    assert d.edit(spec(2), "ann", at(2))
    assert d.publish("paul", at(3)).verified is None


def test_an_edit_back_to_the_verified_spec_is_still_an_edit() -> None:
    d = created(1)
    d.record_dry_run(d.fingerprint, [], "rita", at(1))
    d.edit(spec(2), "ann", at(2))
    d.edit(spec(1), "ann", at(3))
    assert d.passing is not None and d.passing.fingerprint == d.fingerprint
    assert d.publish("paul", at(4)).verified is None


def test_a_dry_run_with_problems_verifies_nothing() -> None:
    d = created()
    d.record_dry_run(d.fingerprint, ["phases.0.steps.0.params.count: must be ≥ 1"], "rita", at(1))
    assert d.verified is None and not d.dry_runs[-1].passed
    assert d.publish("paul", at(2)).verified is None


def test_the_latest_passing_dry_run_vouches_even_when_a_later_one_of_the_same_draft_failed() -> (
    None
):
    """The rule as the brief words it: the latest *passing* dry run on the unedited draft."""
    d = created()
    d.record_dry_run(d.fingerprint, [], "rita", at(1))
    d.record_dry_run(d.fingerprint, ["phases.0.steps.0.action: no module"], "vic", at(2))
    assert d.publish("paul", at(3)).verified == Stamp("rita", at(1))


def test_verifying_the_edited_draft_verifies_it_with_the_new_reviewer() -> None:
    d = created()
    d.record_dry_run(d.fingerprint, [], "rita", at(1))
    d.edit(spec(5), "ann", at(2))
    d.record_dry_run(d.fingerprint, [], "vic", at(3))
    assert d.publish("paul", at(4)).verified == Stamp("vic", at(3))


def test_a_dry_run_of_a_draft_that_changed_meanwhile_is_refused() -> None:
    d = created()
    checked = d.fingerprint
    d.edit(spec(3), "ann", at(1))
    with pytest.raises(DraftChanged):
        d.record_dry_run(checked, [], "rita", at(2))
    assert d.dry_runs == []


def test_an_edit_that_changes_nothing_records_nothing_and_keeps_the_verification() -> None:
    d = created()
    d.record_dry_run(d.fingerprint, [], "rita", at(1))
    d.collect_events()
    assert not d.edit(spec(1), "ann", at(2))
    assert d.collect_events() == [] and d.verified == Stamp("rita", at(1))


def test_a_published_version_never_changes_when_the_draft_is_edited() -> None:
    d = created(1)
    first = d.publish("paul", at(1))
    d.edit(spec(9), "ann", at(2))
    d.publish("paul", at(3))
    assert d.frozen(1) == first and first.spec == spec(1)
    assert d.frozen(2) is not None and d.frozen(2).spec == spec(9)  # type: ignore[union-attr]
    assert d.frozen(3) is None and d.frozen(0) is None


def test_formatting_and_left_out_defaults_do_not_change_the_fingerprint_but_any_edit_does() -> None:
    terse = '{"name":"fair","phases":[{"id":"p","steps":[{"id":"s","action":"fair.stall"}]}]}'
    spaced = """{ "phases": [ { "steps": [ { "params": {}, "action": "fair.stall", "id": "s" } ],
                  "after_s": 0, "advance": "auto", "id": "p" } ], "name": "fair" }"""
    assert fingerprint(draft_spec(terse)) == fingerprint(draft_spec(spaced))
    assert fingerprint(draft_spec(terse)) != fingerprint(
        draft_spec(terse.replace('fair"', 'Fair"'))
    )


def test_scheduling_needs_a_published_version() -> None:
    d = created()
    with pytest.raises(NothingPublished):
        d.note_scheduled(uuid4(), at(10), "sam", at(1))
    d.publish("paul", at(2))
    assert d.note_scheduled(uuid4(), at(10), "sam", at(3)).number == 1


def occurrence(verified: bool = True) -> tuple[Definition, Occurrence]:
    d = created()
    if verified:
        d.record_dry_run(d.fingerprint, [], "rita", at(1))
    version = d.publish("paul", at(2))
    return d, Occurrence.schedule(uuid4(), d.id, d.name, at(60), version, "sam", at(3))


def test_an_occurrence_carries_its_pinned_version_s_verified_stamp() -> None:
    _, o = occurrence()
    assert (o.pinned_version, o.verified) == (1, Stamp("rita", at(1)))
    _, unverified = occurrence(verified=False)
    assert unverified.verified is None


def test_an_occurrence_starts_once_only_when_due_into_the_run_its_id_names() -> None:
    _, o = occurrence()
    with pytest.raises(NotDue):
        o.start("w1", at(59))
    assert o.start("w1", at(60)) == run_of(o.id) == o.run_id
    with pytest.raises(AlreadyStarted, match=str(run_of(o.id))):
        o.start("w2", at(61))


def test_a_started_or_cancelled_occurrence_is_not_repinned_nor_cancelled() -> None:
    d, started = occurrence()
    started.start("w1", at(60))
    _, cancelled = occurrence()
    cancelled.cancel("sam", at(10))
    v2 = d.publish("paul", at(20))
    for done in (started, cancelled):
        with pytest.raises(OccurrenceNotScheduled):
            done.repin(v2, "paul", at(20))
        with pytest.raises(OccurrenceNotScheduled):
            done.cancel("sam", at(20))
    with pytest.raises(OccurrenceNotScheduled):
        cancelled.start("w1", at(60))


def test_a_repinned_occurrence_takes_the_new_version_s_stamp_verified_or_not() -> None:
    d, o = occurrence()
    d.edit(spec(4), "ann", at(5))
    o.repin(d.publish("paul", at(6)), "paul", at(6))
    assert (o.pinned_version, o.verified) == (2, None)


# --- the rule for every sequence of edits, dry runs and publishes ---------------------------

Op = tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("edit"), st.integers(1, 3)),
        st.tuples(st.just("pass"), st.just(0)),
        st.tuples(st.just("fail"), st.just(0)),
        st.tuples(st.just("publish"), st.just(0)),
    ),
    max_size=14,
)


@given(OPS)
def test_a_version_is_verified_exactly_when_the_latest_passing_dry_run_checked_it_unedited(
    ops: list[Op],
) -> None:
    d = created(1)
    passing: tuple[str, str, datetime] | None = None  # fingerprint, reviewer, time
    edited_since = False
    for minute, (op, count) in enumerate(ops, start=1):
        if op == "edit":
            edited_since = d.edit(spec(count), "ann", at(minute)) or edited_since
        elif op in ("pass", "fail"):
            d.record_dry_run(
                d.fingerprint, [] if op == "pass" else ["x: no"], f"r{minute}", at(minute)
            )
            if op == "pass":
                passing, edited_since = (d.fingerprint, f"r{minute}", at(minute)), False
        else:
            version = d.publish("paul", at(minute))
            vouches = passing is not None and passing[0] == version.fingerprint
            expected = (
                Stamp(passing[1], passing[2]) if passing and vouches and not edited_since else None
            )
            assert version.verified == expected

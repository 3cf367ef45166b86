"""Domain tier: given a ledger entry's events, when a command, then its events or a domain error.

No store here: aggregates are built by commands, their pending events collected, and the state
after replaying those events from nothing must equal the state the commands left.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from runledger.domain.errors import (
    AlreadyResolved,
    NotAPlaceholder,
    NotClaimable,
    NotClaimHolder,
    RunNotRunning,
)
from runledger.domain.ids import natural_id
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND, Resource
from runledger.domain.run import Run
from runledger.domain.runlog import LogEntry
from runledger.domain.status import cleanup_status

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
MAX = 3
RUN = UUID("00000000-0000-4000-8000-000000000001")


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def named(kind: str = "creature", ref: str = "c1", **extra: Any) -> Resource:
    fields: dict[str, Any] = {
        "run_id": RUN,
        "step": "spawn",
        "kind": kind,
        "ref": ref,
        "module": "world",
        "action": "world.spawn",
        "idempotency_key": "k1",
        "payload": None,
        "member_key": None,
        "until": None,
        "at": T0,
    }
    return Resource(**(fields | extra))


def placeholder() -> Resource:
    return named(kind=PLACEHOLDER_KIND, ref="k1", payload={"action": "world.spawn"})


def claimed(entry: Resource, worker: str = "w1", when: float = 0, for_s: float = 40) -> Resource:
    entry.claim_revert(worker, at(when), at(when + for_s), MAX)
    return entry


def reverted(entry: Resource) -> Resource:
    claimed(entry).mark_reverted("w1", 1, at(1))
    return entry


def failed(entry: Resource, worker: str = "w1", mode: Any = "retry", when: float = 0) -> Resource:
    claimed(entry, worker, when)
    entry.fail_revert(worker, entry.attempts, mode, "the shard said no", at(when + 1))
    return entry


def drifted(entry: Resource) -> Resource:
    claimed(entry)
    entry.mark_drifted("w1", entry.attempts, {"rain": 0.2}, "somebody else's value", at(1))
    return entry


def used_up(entry: Resource) -> Resource:
    for n in range(MAX):
        failed(entry, when=n * 100)
    return entry


def new_events(entry: Resource) -> list[str]:
    """The names of the events a command just produced, clearing them."""
    return [type(e).__name__ for e in entry.collect_events()]


def replayed(entry: Resource) -> Resource:
    """The aggregate rebuilt from its own events, as a repository would."""
    events = entry.collect_events()
    rebuilt: Any = None
    for event in events:
        rebuilt = event.mutate(rebuilt)
    assert isinstance(rebuilt, Resource)
    return rebuilt


def state_of(entry: Resource) -> dict[str, Any]:
    return {
        "state": entry.state,
        "attempts": entry.attempts,
        "terminal": entry.terminal,
        "claim_worker": entry.claim_worker,
        "claim_expires_at": entry.claim_expires_at,
        "last_error": entry.last_error,
        "drift_current": entry.drift_current,
        "next_attempt_at": entry.next_attempt_at,
        "version": entry.version,
    }


# --- recording ---------------------------------------------------------------------------------


def test_a_named_resource_is_recorded_live_and_a_placeholder_as_a_placeholder() -> None:
    entry, step = named(), placeholder()
    assert (entry.state, entry.unresolved, entry.attempts) == ("live", True, 0)
    assert (step.state, step.is_placeholder, step.unresolved) == ("placeholder", True, True)
    assert new_events(entry) == ["Recorded"]


def test_the_same_natural_key_gives_the_same_id_and_any_other_key_another() -> None:
    assert named().id == named().id == Resource.create_id(RUN, "spawn", "creature", "c1")
    assert named(ref="c2").id != named().id
    assert named(kind="npc").id != named().id
    assert named(step="other").id != named().id
    assert named(run_id=uuid4()).id != named().id
    assert LogEntry.create_id("swept|x") == LogEntry.create_id("swept|x")
    assert LogEntry.create_id("swept|x") != LogEntry.create_id("swept|y")
    assert natural_id("a", 1) == natural_id("a", 1) != natural_id("a", 2)


def test_the_natural_key_cannot_be_confused_by_moving_a_separator() -> None:
    assert Resource.create_id(RUN, "a", "b c", "d") != Resource.create_id(RUN, "a b", "c", "d")


def test_replaying_the_events_gives_the_same_state_as_the_commands() -> None:
    entry = failed(named())
    entry.reset_attempts("alice", at(5))
    claimed(entry, "w2", when=6)
    entry.mark_drifted("w2", 1, [1, 2], "moved", at(7))
    expected = state_of(entry)
    assert state_of(replayed(entry)) == expected


# --- retryable ---------------------------------------------------------------------------------


def test_a_live_entry_with_no_attempts_is_retryable() -> None:
    assert named().retryable(T0, MAX)
    assert placeholder().retryable(T0, MAX)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda e: claimed(e), id="under-a-live-claim"),
        pytest.param(lambda e: drifted(e), id="drifted"),
        pytest.param(lambda e: failed(e, mode="terminal"), id="terminally-failed"),
        pytest.param(lambda e: e.keep("alice", T0) or e, id="kept"),
        pytest.param(lambda e: e.expire("deadline", T0) or e, id="expired"),
        pytest.param(reverted, id="reverted"),
    ],
)
def test_an_entry_is_not_retryable_when(make: Any) -> None:
    entry = make(named())
    assert not entry.retryable(at(2), MAX)


def test_a_retry_failure_stays_retryable_until_the_attempts_are_used() -> None:
    entry = named()
    for attempt in range(1, MAX + 1):
        assert entry.retryable(at(attempt * 100), MAX)
        failed(entry, when=attempt * 100)
        assert (entry.state, entry.attempts, entry.terminal) == ("failing", attempt, False)
    assert not entry.retryable(at(1000), MAX)
    assert entry.unresolved


def test_an_orphaned_entry_is_still_retryable() -> None:
    entry = named()
    entry.orphan("gone", T0)
    assert (entry.state, entry.unresolved) == ("orphaned", True)
    assert entry.retryable(at(1), MAX)


def test_a_superseded_placeholder_is_resolved_and_not_retryable() -> None:
    entry = placeholder()
    entry.supersede(at(1))
    assert (entry.state, entry.unresolved, entry.retryable(at(2), MAX)) == (
        "superseded",
        False,
        False,
    )


# --- claims ------------------------------------------------------------------------------------


def test_a_claim_counts_an_attempt_and_names_its_worker_and_expiry() -> None:
    entry = named()
    new_events(entry)
    entry.claim_revert("w1", T0, at(40), MAX)
    assert new_events(entry) == ["RevertClaimed"]
    assert (entry.attempts, entry.claim_worker, entry.claim_expires_at) == (1, "w1", at(40))
    assert entry.under_live_claim(at(39)) and not entry.under_live_claim(at(40))


def test_a_live_claim_cannot_be_claimed_again() -> None:
    entry = claimed(named())
    with pytest.raises(NotClaimable, match="claimed by w1"):
        entry.claim_revert("w2", at(10), at(50), MAX)
    assert (entry.attempts, entry.claim_worker) == (1, "w1")


def test_an_expired_claim_is_claimable_again_and_its_attempt_stays_counted() -> None:
    entry = claimed(named(), "w1", when=0, for_s=40)
    entry.claim_revert("w2", at(40), at(80), MAX)
    assert (entry.attempts, entry.claim_worker) == (2, "w2")


@pytest.mark.parametrize(
    ("make", "why"),
    [
        pytest.param(lambda e: drifted(e), "drifted", id="drifted"),
        pytest.param(lambda e: failed(e, mode="terminal"), "terminally", id="terminal"),
        pytest.param(lambda e: e.keep("alice", T0) or e, "is kept", id="kept"),
        pytest.param(lambda e: e.expire("deadline", T0) or e, "is expired", id="expired"),
        pytest.param(reverted, "is reverted", id="reverted"),
    ],
)
def test_a_claim_is_refused_with_a_reason(make: Any, why: str) -> None:
    entry = make(named())
    new_events(entry)
    with pytest.raises(NotClaimable, match=why):
        entry.claim_revert("w2", at(100), at(140), MAX)
    assert new_events(entry) == []


def test_a_claim_is_refused_once_the_attempts_are_used() -> None:
    entry = used_up(named())
    with pytest.raises(NotClaimable, match=f"used its {MAX} attempts"):
        entry.claim_revert("w1", at(1000), at(1040), MAX)
    assert entry.attempts == MAX


def test_a_superseded_placeholder_cannot_be_claimed() -> None:
    entry = placeholder()
    entry.supersede(T0)
    with pytest.raises(NotClaimable, match="superseded"):
        entry.claim_revert("w1", T0, at(40), MAX)


# --- verdicts ----------------------------------------------------------------------------------


def test_the_claim_holder_reverts_and_the_claim_is_released() -> None:
    entry = claimed(named())
    new_events(entry)
    entry.mark_reverted("w1", 1, at(1))
    assert new_events(entry) == ["Reverted"]
    assert (entry.state, entry.unresolved, entry.claim_worker, entry.claim_expires_at) == (
        "reverted",
        False,
        None,
        None,
    )


@pytest.mark.parametrize(
    "verdict",
    [
        pytest.param(lambda e, w, n: e.mark_reverted(w, n, at(1)), id="reverted"),
        pytest.param(lambda e, w, n: e.fail_revert(w, n, "retry", "no", at(1)), id="failed"),
        pytest.param(lambda e, w, n: e.mark_drifted(w, n, 1, "moved", at(1)), id="drifted"),
    ],
)
def test_a_verdict_is_refused_from_anyone_but_the_claim_holder(verdict: Any) -> None:
    unclaimed = named()
    with pytest.raises(NotClaimHolder):
        verdict(unclaimed, "w1", 0)
    entry = claimed(named(), "w1")
    new_events(entry)
    with pytest.raises(NotClaimHolder):
        verdict(entry, "w2", 1)
    with pytest.raises(NotClaimHolder):
        verdict(entry, "w1", 2)
    assert new_events(entry) == []
    assert (entry.state, entry.claim_worker) == ("live", "w1")


def test_a_worker_whose_claim_expired_and_was_taken_cannot_give_a_verdict() -> None:
    entry = claimed(named(), "w1", when=0, for_s=40)
    entry.claim_revert("w2", at(41), at(81), MAX)
    with pytest.raises(NotClaimHolder):
        entry.mark_reverted("w1", 1, at(42))
    entry.mark_reverted("w2", 2, at(42))
    assert entry.state == "reverted"


def test_a_verdict_cannot_be_given_twice() -> None:
    entry = claimed(named())
    entry.fail_revert("w1", 1, "retry", "no", at(1))
    with pytest.raises(NotClaimHolder):
        entry.mark_reverted("w1", 1, at(2))


def test_a_retry_failure_keeps_the_error_and_releases_the_claim() -> None:
    entry = failed(named())
    assert (entry.state, entry.terminal, entry.last_error) == (
        "failing",
        False,
        "the shard said no",
    )
    assert entry.claim_worker is None and entry.retryable(at(2), MAX)


def test_a_terminal_failure_leaves_automatic_retry_without_burning_the_counter() -> None:
    entry = failed(named(), mode="terminal")
    assert (entry.state, entry.terminal, entry.attempts) == ("failing", True, 1)
    assert entry.unresolved and not entry.retryable(at(1000), MAX)


def test_a_drift_keeps_the_current_value_and_is_not_retried() -> None:
    entry = drifted(named())
    assert (entry.state, entry.attempts, entry.drift_current) == ("drifted", 1, {"rain": 0.2})
    assert entry.last_error == "somebody else's value"
    assert entry.unresolved and not entry.retryable(at(1000), MAX)


# --- a person's decisions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda e: failed(e, mode="terminal"), id="terminal"),
        pytest.param(drifted, id="drifted"),
        pytest.param(lambda e: used_up(e), id="used-up"),
    ],
)
def test_attempts_reset_lifts_the_stop_and_counts_from_zero(make: Any) -> None:
    entry = make(named())
    new_events(entry)
    entry.reset_attempts("alice", at(1000))
    assert new_events(entry) == ["AttemptsReset"]
    assert (entry.state, entry.attempts, entry.terminal) == ("failing", 0, False)
    assert entry.retryable(at(1000), MAX)


def test_attempts_reset_releases_a_claim_and_keeps_an_orphan_orphaned() -> None:
    entry = named()
    entry.orphan("gone", T0)
    claimed(entry)
    entry.reset_attempts("alice", at(1))
    assert (entry.state, entry.attempts, entry.claim_worker) == ("orphaned", 0, None)


def test_attempts_reset_is_refused_on_a_resolved_entry() -> None:
    entry = named()
    entry.keep("alice", T0)
    with pytest.raises(AlreadyResolved):
        entry.reset_attempts("bob", at(1))


def test_keep_resolves_an_entry_without_touching_its_attempts() -> None:
    entry = named()
    new_events(entry)
    entry.keep("alice", T0)
    assert new_events(entry) == ["Kept"]
    assert (entry.state, entry.unresolved, entry.attempts) == ("kept", False, 0)


def test_keeping_or_expiring_an_entry_leaves_no_attempt_waiting_for_its_time() -> None:
    resolvers: list[Callable[[Resource], None]] = [
        lambda e: e.keep("alice", at(5)),
        lambda e: e.expire("deadline", at(5)),
    ]
    for resolve in resolvers:
        entry = claimed(named())
        entry.fail_revert("w1", 1, "retry", "busy", at(1), next_attempt_at=at(30))
        assert waiting(entry) == (at(30), None)
        resolve(entry)
        assert waiting(entry) == (None, None)


def waiting(entry: Resource) -> tuple[datetime | None, str | None]:
    return entry.next_attempt_at, entry.claim_worker


def test_keep_resolves_a_placeholder_and_a_failing_entry_alike() -> None:
    step = placeholder()
    step.keep("alice", T0)
    entry = failed(named())
    entry.keep("alice", at(5))
    assert (step.state, entry.state, entry.attempts) == ("kept", "kept", 1)


def test_keep_is_refused_on_a_resolved_entry() -> None:
    entry = claimed(named())
    entry.mark_reverted("w1", 1, at(1))
    with pytest.raises(AlreadyResolved):
        entry.keep("alice", at(2))


# --- the world's own word ----------------------------------------------------------------------


def test_expire_resolves_a_named_entry_and_releases_its_claim() -> None:
    entry = claimed(named())
    new_events(entry)
    entry.expire("deadline", at(1))
    assert new_events(entry) == ["Expired"]
    assert (entry.state, entry.unresolved, entry.claim_worker) == ("expired", False, None)


def test_orphan_leaves_the_entry_unresolved_with_the_reason() -> None:
    entry = named()
    entry.orphan("no longer in force", T0)
    assert (entry.state, entry.last_error, entry.unresolved) == (
        "orphaned",
        "no longer in force",
        True,
    )


def test_expire_and_orphan_refuse_a_placeholder() -> None:
    for command in ("expire", "orphan"):
        step = placeholder()
        new_events(step)
        with pytest.raises(NotAPlaceholder):
            getattr(step, command)("gone", T0)
        assert new_events(step) == [] and step.state == "placeholder"


def test_expire_and_orphan_refuse_a_resolved_entry() -> None:
    for command in ("expire", "orphan"):
        entry = named()
        entry.keep("alice", T0)
        with pytest.raises(AlreadyResolved):
            getattr(entry, command)("gone", at(1))


def test_a_drifted_or_terminally_failed_entry_can_still_expire() -> None:
    for entry in (drifted(named()), failed(named(), mode="terminal")):
        entry.expire("deadline", at(5))
        assert entry.state == "expired"


# --- supersede ---------------------------------------------------------------------------------


def test_only_a_placeholder_can_be_superseded() -> None:
    step = placeholder()
    step.supersede(T0)
    assert step.state == "superseded"
    with pytest.raises(NotAPlaceholder):
        step.supersede(at(1))
    with pytest.raises(NotAPlaceholder):
        named().supersede(T0)
    kept = placeholder()
    kept.keep("alice", T0)
    with pytest.raises(NotAPlaceholder):
        kept.supersede(at(1))


def test_a_lease_is_a_named_entry_of_kind_override() -> None:
    lease = named(kind=LEASE_KIND, ref="weather#plaza", until=at(60))
    assert (lease.is_lease, lease.is_placeholder, lease.state, lease.until) == (
        True,
        False,
        "live",
        at(60),
    )


# --- runs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "status"),
    [
        (lambda r: r.complete(at(1)), "completed"),
        (lambda r: r.cancel("alice", False, at(1)), "cancelled"),
        (lambda r: r.abort("a step could not succeed", at(1)), "aborted"),
    ],
)
def test_a_run_ends_once(end: Any, status: str) -> None:
    run = Run.start(uuid4(), "festival", T0)
    assert (run.status, run.is_terminal) == ("running", False)
    end(run)
    assert (run.status, run.is_terminal, run.ended_at) == (status, True, at(1))
    acts: list[Callable[[], None]] = [
        lambda: run.complete(at(2)),
        lambda: run.cancel("bob", True, at(2)),
        lambda: run.abort("again", at(2)),
    ]
    for again in acts:
        with pytest.raises(RunNotRunning):
            again()
    assert run.status == status


def test_a_run_keeps_the_id_it_was_given() -> None:
    run_id = uuid4()
    assert Run.start(run_id, "festival", T0).id == run_id


# --- cleanup status ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("running", "entries", "unresolved", "open_", "expected"),
    [
        (True, 0, 0, 0, "not_required"),
        (False, 0, 0, 0, "not_required"),
        (True, 3, 3, 3, "pending"),
        (True, 3, 0, 0, "pending"),
        (True, 3, 2, 0, "pending"),
        (False, 3, 2, 1, "pending"),
        (False, 3, 0, 0, "complete"),
        (False, 3, 2, 0, "incomplete"),
        (False, 1, 1, 0, "incomplete"),
    ],
)
def test_cleanup_status_follows_the_spec_table(
    running: bool, entries: int, unresolved: int, open_: int, expected: str
) -> None:
    assert (
        cleanup_status(running=running, entries=entries, unresolved=unresolved, open_=open_)
        == expected
    )

"""When a run's lease stops holding its target (SPEC "Leases"): held while the lease is live or
still being given back; no longer once it drifted (somebody else's value stands) or was kept.
On an SQLite file and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.dry_run import StartRefused
from runledger.domain.reservation import holds_target
from runledger.domain.resource import Resource
from runledger.projections.queries import EntryRow
from tests.support.playing import START, Clock, phase, runledgers, spec, step
from tests.support.reading import row, the_step, tick, written
from tests.support.world import LEASE, World

SPAWN = "game.spawn"
Opener = Callable[..., Runledger]


@pytest.fixture
def rl(store_url: str, registry: Registry, clock: Clock, game: World) -> Iterator[Runledger]:
    with runledgers(store_url, registry, clock) as open_one:
        yield open_one()


def holding(value: Any = "storm", lease: str = LEASE) -> dict[str, Any]:
    """A run that leases the plaza, then waits in its manual phase for a person to end it."""
    return spec(
        phase(
            "p1",
            step(
                "weather", "core.lease", lease=lease, target="plaza", value=value, duration_s=3600
            ),
            step("guard", SPAWN),
            advance="manual",
        )
    )


def lease_of(rl: Runledger, run: UUID) -> EntryRow:
    rl.projector.catch_up()
    [found] = [e for e in rl.queries.entries(run) if e.kind == "override"]
    return found


def refused_at_start(rl: Runledger, holder: UUID, lease: str = LEASE) -> None:
    """A start asks who holds the plaza by the very rule dispatch asks by (SPEC "A start checks
    what a dry run checks"): while it is held, a new run asking for it is refused, naming the
    holder, and nothing is written."""
    before = written(rl)
    with pytest.raises(StartRefused) as refused:
        rl.runs.start(holding("snow", lease))
    assert f"'plaza' ({lease}) is held by run {holder}" in str(refused.value)
    assert written(rl) == before


def asks_again(rl: Runledger, value: Any = "snow", lease: str = LEASE) -> UUID:
    """A new run asks for the plaza; only the advance leg runs, so nothing is given back first."""
    second = rl.runs.start(holding(value, lease))
    rl.runs.advance_leg("w2")
    return second


def test_a_completed_runs_drifted_lease_lets_a_new_run_take_the_target(
    rl: Runledger, game: World
) -> None:
    first = rl.runs.start(holding())
    tick(rl)
    game.values["plaza"] = "sunny (a game master)"
    assert rl.runs.advance(first, "alice") == "completed"
    tick(rl)
    assert lease_of(rl, first).status == "drifted"
    second = asks_again(rl)
    assert the_step(rl, second, "weather").state == "done"
    assert lease_of(rl, second).payload == {"baseline": "sunny (a game master)", "applied": "snow"}
    assert game.values == {"plaza": "snow"}
    assert row(rl, first).cleanup_status == "incomplete"  # the drift still needs a person


def test_a_kept_lease_lets_a_new_run_take_the_target(rl: Runledger, game: World) -> None:
    first = rl.runs.start(holding())
    tick(rl)
    rl.ledger.cancel_run(first, "alice", cleanup=False)
    assert lease_of(rl, first).status == "kept"
    second = asks_again(rl)
    assert the_step(rl, second, "weather").state == "done"
    # Alice kept the storm in the world: it is what the new run finds there.
    assert lease_of(rl, second).payload == {"baseline": "storm", "applied": "snow"}


def test_a_lease_failing_with_attempts_left_still_holds_its_target(
    rl: Runledger, game: World, registry: Registry
) -> None:
    def refuse(**_: Any) -> Any:
        raise RuntimeError("the weather shard is down")

    registry.module("flaky").lease("flaky", apply=game.verb("apply", "flaky"), restore=refuse)
    first = rl.runs.start(holding(lease="flaky"))
    tick(rl)
    assert rl.runs.advance(first, "alice") == "completed"
    tick(rl)
    held = lease_of(rl, first)
    assert (held.status, held.attempts) == ("failing", 1)
    refused_at_start(rl, first, lease="flaky")
    assert game.values == {"plaza": "storm"}


def test_a_lease_under_a_live_claim_still_holds_its_target(
    rl: Runledger, game: World, clock: Clock
) -> None:
    first = rl.runs.start(holding())
    tick(rl)
    assert rl.runs.advance(first, "alice") == "completed"
    # A cleanup worker took the lease for its restore and has not answered yet.
    entry: Resource = rl.app.repository.get(lease_of(rl, first).entry_id)
    assert isinstance(entry, Resource)
    entry.claim_revert("w9", clock(), clock() + timedelta(minutes=1), 3)
    rl.app.save(entry)
    refused_at_start(rl, first)
    assert game.values == {"plaza": "storm"}


def test_a_lease_whose_answer_never_reached_the_ledger_holds_its_target_until_given_back(
    rl: Runledger, game: World
) -> None:
    first = rl.runs.start(holding())
    # A runner that applied the lease and died before it could record the answer.
    key = f"{first}:weather"
    rl.ledger.record_placeholder(first, "weather", "game", "core.lease", key)
    rl.runs.core_lease.perform(holding()["phases"][0]["steps"][0]["params"], key, str(first))
    rl.ledger.abort_run(first, "the runner died")
    refused_at_start(rl, first)
    rl.cleanup.sweep("w1")  # core's reservation says what to put back
    assert game.values == {"plaza": "clear"}
    second = asks_again(rl)
    assert lease_of(rl, second).payload == {"baseline": "clear", "applied": "snow"}
    assert row(rl, first).cleanup_status == "complete"


@pytest.mark.parametrize(
    ("state", "held"),
    [
        ("placeholder", True),
        ("live", True),
        ("failing", True),
        ("orphaned", True),
        ("drifted", False),
        ("kept", False),
        ("reverted", False),
        ("expired", False),
        ("superseded", False),
    ],
)
def test_the_rule_holds_a_target_only_while_the_lease_is_live_or_being_given_back(
    state: str, held: bool
) -> None:
    now = START
    assert holds_target(state, run_live=True, until=now + timedelta(hours=1), now=now) is held
    assert holds_target(state, run_live=False, until=now - timedelta(hours=1), now=now) is held


def test_before_its_entry_is_recorded_a_lease_holds_while_its_run_is_live_and_in_time() -> None:
    soon, past = START + timedelta(seconds=1), START - timedelta(seconds=1)
    assert holds_target(None, run_live=True, until=soon, now=START)
    assert not holds_target(None, run_live=True, until=past, now=START)
    assert not holds_target(None, run_live=False, until=soon, now=START)

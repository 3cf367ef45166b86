"""SPEC "A person's act never undoes another live run", on an SQLite file and on PostgreSQL.

Issue 26, cause 4: run A leases north=fog; a game master sets storm; A ends and its restore,
finding storm, leaves it (drifted). Run B leases north=fog, so its baseline is storm. A person's
retry of A would find fog (B's), take it for A's own, and put A's baseline "clear" back over B's
live lease; when B ended, the game master's storm would be gone. A person's retry, the bulk plan
and apply, and the console's confirmation leave such an entry alone and say why, before anything
is done. Every test reads the world itself (the sky's own values and its log of restores).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.leases import CORE_LEASE
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND
from runledger.projections.pages import Where
from runledger.projections.queries import EntryRow
from tests.support.api_support import serving
from tests.support.console_support import Console, text_of
from tests.support.playing import Clock, phase, spec, step
from tests.support.reading import lines, status, tick
from tests.support.world import World

SKY = "sky"
LEASE = "sky.weather"
Opener = Callable[..., Runledger]


def sky_world(registry: Registry) -> World:
    """The World as the module sky, with one lease over its weather: ``values`` is the world
    itself. A restore puts the baseline back only if the target still holds what was applied
    (compare-and-set), the baseline and applied value its key's apply found winning."""
    sky = World(name=SKY, lease=LEASE)
    sky.install(registry)
    return sky


@pytest.fixture
def sky(registry: Registry) -> World:
    return sky_world(registry)


@pytest.fixture
def rl(opened: Opener, sky: World) -> Runledger:
    return opened()


def holding(target: str = "north", value: Any = "fog", name: str = "fog") -> dict[str, Any]:
    """A run that leases a target for an hour, then waits in its manual phase for a person."""
    lease = step("weather", CORE_LEASE, lease=LEASE, target=target, value=value, duration_s=3600)
    return spec(phase("p1", lease, advance="manual"), name=name)


def finish(rl: Runledger, run: UUID) -> None:
    assert rl.runs.advance(run, "alice") == "completed"


def lease_of(rl: Runledger, run: UUID) -> EntryRow:
    rl.projector.catch_up()
    [found] = [e for e in rl.queries.entries(run) if e.kind == LEASE_KIND]
    return found


def said(target: str, run: UUID, until: str) -> str:
    return f"{target} is held by run {run} until {until} UTC: not restored"


def drifted_then_leased(rl: Runledger, sky: World, clock: Clock) -> tuple[UUID, UUID]:
    """Cause 4 up to the person's act: A's lease drifted under a game master's storm, and B
    holds north=fog over that storm until 13:01:00."""
    a = rl.runs.start(holding(name="first fog"))
    tick(rl)
    assert sky.values == {"north": "fog"}
    sky.values["north"] = "storm"  # a game master
    finish(rl, a)
    tick(rl)
    assert (lease_of(rl, a).status, lease_of(rl, a).drift_current) == ("drifted", "storm")
    assert sky.values == {"north": "storm"}
    clock.advance(60)
    b = rl.runs.start(holding(name="second fog"))
    tick(rl)
    assert lease_of(rl, b).payload == {"baseline": "storm", "applied": "fog"}
    assert sky.values == {"north": "fog"}
    return a, b


def one_of_two_held(rl: Runledger, sky: World, name: str = "A") -> tuple[UUID, UUID]:
    """A run that leased north and east, both drifted under a game master; then B holds north."""
    east = step("east", CORE_LEASE, lease=LEASE, target="east", value="hail", duration_s=60)
    north = holding()["phases"][0]["steps"][0]
    a = rl.runs.start(spec(phase("p1", north, east, advance="manual"), name=name))
    tick(rl)
    sky.values.update(north="storm", east="sleet")  # a game master, on both
    finish(rl, a)
    tick(rl)
    b = rl.runs.start(holding(name="second fog"))
    tick(rl)
    assert sky.values == {"north": "fog", "east": "sleet"}
    return a, b


# --- a person's retry of one run -----------------------------------------------------------------


def test_a_person_s_retry_never_restores_over_another_live_run_s_lease(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a, b = drifted_then_leased(rl, sky, clock)
    restores = len(sky.restore_calls)
    retried = rl.cleanup.manual_cleanup(a, "ops")
    assert sky.values == {"north": "fog"}  # B's override stands
    assert len(sky.restore_calls) == restores  # nothing was asked of the sky
    [held] = retried.held
    assert held.said == said("north", b, "2026-12-02 13:01:00")
    assert (held.holder, held.lease, held.target) == (b, LEASE, "north")
    assert held.name == f"{LEASE_KIND}:{LEASE}#north"
    assert (retried.attempted, retried.reverted, retried.by) == (0, 0, "ops")
    entry = lease_of(rl, a)
    assert (entry.status, entry.attempts, entry.drift_current) == ("drifted", 1, "storm")
    assert [line.detail for line in lines(rl, a, "cleanup.retry")] == [
        {"by": "ops", "resources": 0, "held": 1}
    ]
    # When B ends, its own restore puts back what it found: the game master's storm.
    finish(rl, b)
    tick(rl)
    assert sky.values == {"north": "storm"}
    assert lease_of(rl, b).status == "reverted"


def test_once_the_other_run_has_ended_the_same_entry_is_retried_and_the_storm_stays(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a, b = drifted_then_leased(rl, sky, clock)
    rl.cleanup.manual_cleanup(a, "ops")
    finish(rl, b)
    tick(rl)
    assert sky.values == {"north": "storm"}
    again = rl.cleanup.manual_cleanup(a, "ops")
    assert again.held == []
    assert (again.attempted, again.drifted) == (1, 1)
    assert sky.restore_calls[-1] == {"target": "north", "baseline": "clear", "expected": "fog"}
    assert sky.values == {"north": "storm"}  # A's retry found storm, not its fog: left alone
    entry = lease_of(rl, a)
    assert (entry.status, entry.drift_current) == ("drifted", "storm")
    assert [line.detail for line in lines(rl, a, "cleanup.retry")][-1] == {
        "by": "ops",
        "resources": 1,
    }
    assert status(rl, a) == "incomplete"


def test_a_retry_gives_back_the_rest_of_the_run_and_leaves_only_the_held_lease(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a, b = one_of_two_held(rl, sky)
    sky.values["east"] = "hail"  # the game master puts A's hail back: A's restore will match
    retried = rl.cleanup.manual_cleanup(a, "ops")
    assert [h.target for h in retried.held] == ["north"]
    assert (retried.attempted, retried.reverted) == (1, 1)
    assert sky.values == {"north": "fog", "east": "clear"}
    assert sorted(r["target"] for r in sky.restore_calls) == ["east", "east", "north"]
    assert [line.detail for line in lines(rl, a, "cleanup.retry")] == [
        {"by": "ops", "resources": 1, "held": 1}
    ]
    assert status(rl, b) == "pending"


def test_a_lease_placeholder_whose_target_another_run_holds_is_left_alone_too(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    # Stands in for a runner that died between the apply and saving its answer: the placeholder
    # is ledgered and the apply made, but no override entry ever names it.
    a = rl.runs.start(holding(name="first fog"))
    key = f"{a}:weather"
    rl.ledger.record_placeholder(a, "weather", SKY, CORE_LEASE, key)
    params = {"lease": LEASE, "target": "north", "value": "fog", "duration_s": 3600}
    assert rl.runs.core_lease.perform(params, idempotency_key=key, run_id=str(a))["ok"] is True
    assert sky.values == {"north": "fog"}
    rl.ledger.cancel_run(a, "alice", cleanup=True)
    sky.values["north"] = "storm"  # a game master
    tick(rl)
    [placeholder] = [e for e in rl.queries.entries(a) if e.kind == PLACEHOLDER_KIND]
    assert placeholder.status == "drifted"
    b = rl.runs.start(holding(name="second fog"))
    tick(rl)
    assert sky.values == {"north": "fog"}
    restores = len(sky.restore_calls)
    retried = rl.cleanup.manual_cleanup(a, "ops")
    [held] = retried.held
    assert held.entry_id == placeholder.entry_id
    assert held.said == said("north", b, "2026-12-02 13:00:00")
    assert len(sky.restore_calls) == restores and sky.values == {"north": "fog"}
    rl.projector.catch_up()
    assert rl.queries.entry(placeholder.entry_id) == placeholder  # not reset, not claimed
    finish(rl, b)
    tick(rl)
    assert sky.values == {"north": "storm"}
    assert rl.cleanup.manual_cleanup(a, "ops").held == []
    assert sky.values == {"north": "storm"}


def test_a_target_held_by_the_run_itself_is_not_held_by_another(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a = rl.runs.start(holding())
    tick(rl)
    rl.ledger.cancel_run(a, "alice", cleanup=False)  # kept: A's own lease no longer holds
    assert rl.holds.of_run(a) == []
    b = rl.runs.start(holding(name="second fog"))
    tick(rl)
    assert rl.holds.of_run(b) == []  # a running run's own lease: nobody else holds it


# --- the plan says it before anything is done; apply leaves it alone ------------------------------


def test_the_bulk_plan_warns_and_applying_it_leaves_the_held_lease_alone(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a, b = drifted_then_leased(rl, sky, clock)
    where = Where(module=SKY)
    plan = rl.bulk.plan(where)
    [run] = plan.runs
    [planned] = run.entries
    assert run.run_id == a and planned.held is not None
    assert planned.ask == f"nothing ({said('north', b, '2026-12-02 13:01:00')})"
    restores = len(sky.restore_calls)
    done = rl.bulk.apply(where, plan.fingerprint, "ops")
    assert [h.holder for h in done[a].held] == [b]
    assert len(sky.restore_calls) == restores and sky.values == {"north": "fog"}
    # Once B has ended, the plan would restore: it is a new plan, and the old one is stale.
    finish(rl, b)
    tick(rl)
    fresh = rl.bulk.plan(where)
    [planned] = fresh.runs[0].entries
    assert planned.held is None
    assert planned.ask == f"restore the baseline of {LEASE}#north ({SKY})"
    assert fresh.fingerprint != plan.fingerprint
    rl.bulk.apply(where, fresh.fingerprint, "ops")
    assert sky.values == {"north": "storm"}


# --- over HTTP and at the console ---------------------------------------------------------------


def test_the_api_s_answer_and_the_console_s_confirmation_say_which_lease_is_left_and_why(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a, b = drifted_then_leased(rl, sky, clock)
    api = serving(rl)
    with api.client:
        console = Console(api)
        console.sign_in("operator")
        page = console.get(f"/runs/{a}/confirm/cleanup")
        assert page.status_code == 200, page.text
        shown = text_of(page.text)
        assert (
            "Retry cleanup of 'first fog': nothing would be restored now, because another live "
            f"run holds its target: {said('north', b, '2026-12-02 13:01:00')} Nothing will change."
        ) in shown
        planned = api.post("/admin/events/cleanup/plan", "viewer", json={"module": SKY})
        [entry] = planned.json()["runs"][0]["entries"]
        assert entry["held"]["holder"] == str(b)
        assert entry["held"]["until"] == "2026-12-02T13:01:00Z"
        assert entry["ask"] == f"nothing ({said('north', b, '2026-12-02 13:01:00')})"
        answer = api.post(f"/admin/events/runs/{a}/cleanup", "operator")
        assert answer.status_code == 200, answer.text
        [held] = answer.json()["held"]
        assert held == {
            "entry_id": str(lease_of(rl, a).entry_id),
            "name": f"override:{LEASE}#north",
            "lease": LEASE,
            "target": "north",
            "holder": str(b),
            "until": "2026-12-02T13:01:00Z",
            "said": said("north", b, "2026-12-02 13:01:00"),
        }
        assert sky.values == {"north": "fog"}


def test_the_confirmation_counts_what_is_asked_apart_from_what_is_left(
    rl: Runledger, sky: World, clock: Clock
) -> None:
    a, b = one_of_two_held(rl, sky)
    api = serving(rl)
    with api.client:
        console = Console(api)
        console.sign_in("operator")
        shown = text_of(console.get(f"/runs/{a}/confirm/cleanup").text)
        assert (
            "Retry cleanup of 'A': ask the modules again for 1 of its 2 entries left to give "
            "back, in the name alice; 1 lease entry will not be restored, because another live "
            f"run holds its target: {said('north', b, '2026-12-02 13:00:00')}"
        ) in shown
        assert "Yes, retry cleanup" in shown
        token = console.form_token(f"/runs/{a}")
        done = console.post(f"/runs/{a}/confirm/cleanup", {"csrf": token})
        assert done.status_code == 303
        outcome = text_of(console.get(f"/runs/{a}").text)
        assert (
            "Cleanup retried by alice: 0 given back, 0 failing, 1 drifted; cleanup: needs a person "
            f"(2 entries left). Left alone: {said('north', b, '2026-12-02 13:00:00')}."
        ) in outcome
    assert sky.values == {"north": "fog", "east": "sleet"}

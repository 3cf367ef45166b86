"""Cleanup after an outage over HTTP, on an SQLite file and on PostgreSQL: a plan writes nothing;
applying a plan whose selection has changed since is refused with 409 and retries nothing;
applying a fresh one retries exactly the planned runs, each in the operator's name.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from tests.application.test_person_holds import SKY, drifted_then_leased, said, sky_world
from tests.support.api_support import (
    DOWN,
    Api,
    Shard,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
    tick,
)
from tests.support.playing import Clock
from tests.support.reading import written

PLAN = "/admin/events/cleanup/plan"
APPLY = "/admin/events/cleanup/apply"
INCOMPLETE = {"module": "shard", "cleanup_status": "incomplete"}


def outage(api: Api, shard: Shard, clock: Clock, runs: int, name: str = "festival") -> list[UUID]:
    """Runs that ended while the shard was down, their attempts spent (two, as api_rl says)."""
    shard.revert_answer = DOWN
    started = [api.start(shard_run(2, name=name)) for _ in range(runs)]
    tick(api.rl, 2)
    clock.advance(120)
    tick(api.rl)
    for run in started:
        assert api.run(run)["run"]["cleanup_status"] == "incomplete"
    return started


def plan(api: Api, where: dict[str, Any], who: str = "viewer") -> dict[str, Any]:
    answer = api.post(PLAN, who, json=where)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def retries(rl: Runledger, run: UUID) -> list[dict[str, Any]]:
    rl.projector.catch_up()
    return [line.detail for line in rl.queries.log(run) if line.kind == "cleanup.retry"]


def test_a_plan_names_the_runs_and_entries_and_writes_nothing(
    api: Api, shard: Shard, clock: Clock
) -> None:
    runs = outage(api, shard, clock, 2)
    before = written(api.rl)
    found = plan(api, INCOMPLETE)
    assert written(api.rl) == before
    assert {r["run_id"] for r in found["runs"]} == {str(r) for r in runs}
    assert found["entries"] == 4
    for run in found["runs"]:
        assert (run["status"], run["cleanup_status"]) == ("completed", "incomplete")
        for entry in run["entries"]:
            assert (entry["state"], entry["attempts"]) == ("failing", 2)
            assert entry["last_error"] == "the shard is down"
            assert entry["ask"] == f"shard.spawn: revert {entry['name']}"
    assert found["where"] == {**found["where"], **INCOMPLETE}
    assert shard.reverts.count(f"{runs[0]}:spawn") == 2  # the plan asked the shard nothing


def test_a_fresh_plan_retries_exactly_its_runs_in_the_operator_s_name(
    api: Api, shard: Shard, clock: Clock
) -> None:
    earlier = outage(api, shard, clock, 1)
    clock.advance(3600)
    window = {**INCOMPLETE, "ended_after": clock.now.isoformat()}
    later = outage(api, shard, clock, 2)
    found = plan(api, window)
    assert {r["run_id"] for r in found["runs"]} == {str(r) for r in later}
    shard.revert_answer = None
    asked = len(shard.reverts)
    answer = api.post(
        APPLY, "operator", json={"where": window, "fingerprint": found["fingerprint"]}
    )
    assert answer.status_code == 200, answer.text
    summaries = {s["run_id"]: s for s in answer.json()["runs"]}
    assert set(summaries) == {str(r) for r in later}
    for summary in summaries.values():
        assert (summary["by"], summary["reverted"], summary["remaining"]) == ("alice", 2, 0)
        assert summary["cleanup_status"] == "complete"
    assert sorted(shard.reverts[asked:]) == sorted(f"{r}:spawn" for r in later)
    for run in later:
        assert retries(api.rl, run) == [{"by": "alice", "resources": 2}]
    assert retries(api.rl, earlier[0]) == []
    assert api.run(earlier[0])["run"]["cleanup_status"] == "incomplete"


def test_a_plan_is_stale_once_another_run_ends_in_its_selection(
    api: Api, shard: Shard, clock: Clock
) -> None:
    outage(api, shard, clock, 1)
    found = plan(api, INCOMPLETE)
    assert_refused(api, shard, INCOMPLETE, "0" * 32)  # a plan nobody made
    outage(api, shard, clock, 1, name="late")
    assert_refused(api, shard, INCOMPLETE, found["fingerprint"])


def test_a_plan_is_stale_once_a_planned_entry_has_changed(
    api: Api, shard: Shard, clock: Clock
) -> None:
    first, second = outage(api, shard, clock, 2)
    where = {"module": "shard"}
    found = plan(api, where)
    # Another operator retries one run meanwhile; it fails again, so the run is still selected.
    assert api.post(f"/admin/events/runs/{first}/cleanup", "admin").status_code == 200
    assert {r["run_id"] for r in plan(api, where)["runs"]} == {str(first), str(second)}
    assert_refused(api, shard, where, found["fingerprint"])


def assert_refused(api: Api, shard: Shard, where: dict[str, Any], fingerprint: str) -> None:
    """A stale plan: 409 with one sentence saying how many runs the selection now has, and
    nothing asked of the shard or written."""
    shard.revert_answer = None
    runs = len(plan(api, where)["runs"])
    asked, before = len(shard.reverts), written(api.rl)
    answer = api.post(APPLY, "operator", json={"where": where, "fingerprint": fingerprint})
    assert answer.status_code == 409, answer.text
    assert "stale" in answer.json()["detail"]
    assert f"({runs} run{'' if runs == 1 else 's'})" in answer.json()["detail"]
    assert (len(shard.reverts), written(api.rl)) == (asked, before)


def test_a_plan_warns_of_a_lease_another_live_run_holds_and_applying_it_leaves_it_alone(
    api: Api, registry: Registry, clock: Clock
) -> None:
    sky = sky_world(registry)
    first, second = drifted_then_leased(api.rl, sky, clock)
    held = said("north", second, "2026-12-02 13:01:00")
    found = plan(api, {"module": SKY})
    [entry] = found["runs"][0]["entries"]
    assert (entry["state"], entry["ask"]) == ("drifted", f"nothing ({held})")
    assert (entry["held"]["holder"], entry["held"]["said"]) == (str(second), held)
    answer = api.post(
        APPLY, "operator", json={"where": {"module": SKY}, "fingerprint": found["fingerprint"]}
    )
    assert answer.status_code == 200, answer.text
    [summary] = answer.json()["runs"]
    assert [h["said"] for h in summary["held"]] == [held]
    assert (summary["attempted"], summary["cleanup_status"]) == (0, "incomplete")
    assert sky.values == {"north": "fog"}  # the second run's override stands
    assert retries(api.rl, first) == [{"by": "alice", "resources": 0, "held": 1}]


def test_a_plan_s_filter_is_checked(api: Api) -> None:
    for where in (
        {"run_status": "running"},
        {"cleanup_status": "tidy"},
        {"ended_after": "yesterday"},
        {"modul": "shard"},
    ):
        answer = api.post(PLAN, "viewer", json=where)
        assert answer.status_code == 422, (where, answer.text)
        assert answer.json()["detail"][0]["loc"][-1] == next(iter(where)), where
    answer = api.post(APPLY, "operator", json={"where": {}, "fingerprint": ""})
    assert answer.status_code == 422

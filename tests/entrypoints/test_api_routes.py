"""The run-reading routes through the real app, on an SQLite file and on PostgreSQL: one run with
its phases and grouped entries, the list with its filters and pages, the log, the replay, one
entry and its history.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from tests.support.api_support import (
    DOWN,
    SHARD_SPAWN,
    Api,
    Shard,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
    tick,
)
from tests.support.playing import Clock


def entries_by_state(detail: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {group["state"]: group["entries"] for group in detail["entries"]}


def test_a_run_started_from_a_spec_body_answers_201_with_the_run(api: Api) -> None:
    answer = api.post("/admin/events/runs", "operator", json=shard_run(2, advance="manual"))
    assert answer.status_code == 201, answer.text
    run = answer.json()["run"]
    assert (run["name"], run["status"], run["cleanup_status"]) == (
        "festival",
        "running",
        "not_required",
    )
    assert [p["phase"] for p in answer.json()["phases"]] == ["p1"]


def test_a_running_run_says_why_its_phase_has_not_advanced(api: Api) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    [p1] = api.run(run)["phases"]
    assert p1["headline"] == "Phase p1: steps done, waiting for a person to advance it"
    assert p1["why_not_advanced"] == "its advance rule is manual: a person must advance it"


def test_entries_are_grouped_by_state_with_attempts_last_error_and_next_attempt(
    api: Api, shard: Shard
) -> None:
    shard.revert_answer = DOWN
    run = api.start(shard_run(2))
    tick(api.rl, 2)
    detail = api.run(run)
    assert detail["run"]["status"] == "completed"
    grouped = entries_by_state(detail)
    assert {g["state"]: g["count"] for g in detail["entries"]} == {"failing": 2, "superseded": 1}
    for entry in grouped["failing"]:
        assert (entry["attempts"], entry["last_error"]) == (1, "the shard is down")
        assert entry["next_attempt_at"] is not None
        assert entry["kept_by"] is None
    assert detail["phases"][0]["why_not_advanced"] is None  # an ended run waits for nothing


def test_a_cancel_without_cleanup_shows_who_kept_each_entry(api: Api) -> None:
    run = api.start(shard_run(2, advance="manual"))
    tick(api.rl)
    answer = api.post(f"/admin/events/runs/{run}/cancel", "operator", json={"cleanup": False})
    assert answer.status_code == 200, answer.text
    kept = entries_by_state(answer.json())["kept"]
    assert [e["kept_by"] for e in kept] == ["alice", "alice"]
    assert answer.json()["run"]["cleanup_status"] == "complete"


def test_runs_are_listed_newest_first_a_page_at_a_time(api: Api, clock: Clock) -> None:
    started = []
    for name in ("alpha", "beta", "gamma"):
        started.append(str(api.start(shard_run(1, name=name, advance="manual"))))
        clock.advance(60)
    first = api.get("/admin/events/runs", "viewer", params={"limit": 2}).json()
    assert [r["run_id"] for r in first["items"]] == started[:0:-1]
    assert first["next_cursor"]
    params = {"limit": 2, "cursor": first["next_cursor"]}
    last = api.get("/admin/events/runs", "viewer", params=params).json()
    assert [r["run_id"] for r in last["items"]] == started[:1]
    assert last["next_cursor"] is None


def test_runs_are_filtered_by_status_cleanup_status_and_name(api: Api) -> None:
    aborted = api.start(shard_run(1, name="Winter Fair", advance="manual"))
    running = api.start(shard_run(1, name="summer fair", advance="manual"))
    done = api.start(shard_run(0, name="spring"))
    assert api.post(f"/admin/events/runs/{aborted}/abort", json={"reason": "rain"}).is_success
    tick(api.rl, 2)

    def listed(**params: str) -> list[str]:
        answer = api.get("/admin/events/runs", "viewer", params=params)
        assert answer.status_code == 200, answer.text
        return [r["run_id"] for r in answer.json()["items"]]

    assert listed(status="aborted") == [str(aborted)]
    assert listed(status="running") == [str(running)]
    assert listed(cleanup_status="complete", status="completed") == [str(done)]
    assert set(listed(name="FAIR")) == {str(aborted), str(running)}
    assert listed(name="fair", status="running") == [str(running)]
    assert listed(name="nothing like it") == []


def test_a_bad_cursor_or_filter_is_refused_naming_it(api: Api) -> None:
    for params, field in (
        ({"cursor": "not a cursor"}, "cursor"),
        ({"status": "sleeping"}, "status"),
        ({"cleanup_status": "tidy"}, "cleanup_status"),
        ({"limit": "0"}, "limit"),
    ):
        answer = api.get("/admin/events/runs", "viewer", params=params)
        assert answer.status_code == 422, (params, answer.text)
        assert answer.json()["detail"][0]["loc"] == ["query", field], answer.text


def test_the_log_pages_back_from_its_last_lines(api: Api, shard: Shard) -> None:
    shard.revert_answer = DOWN
    run = api.start(shard_run(2))
    tick(api.rl, 2)
    everything = api.get(f"/admin/events/runs/{run}/log", "viewer").json()
    positions = [line["position"] for line in everything["items"]]
    assert everything["total"] == len(positions) >= 4 and everything["next_cursor"] is None
    last = api.get(f"/admin/events/runs/{run}/log", "viewer", params={"limit": 2}).json()
    assert [line["position"] for line in last["items"]] == positions[-2:]
    params = {"limit": 2, "cursor": last["next_cursor"]}
    before = api.get(f"/admin/events/runs/{run}/log", "viewer", params=params).json()
    assert [line["position"] for line in before["items"]] == positions[-4:-2]
    kinds = [line["kind"] for line in everything["items"]]
    assert kinds[0] == "run.started" and "cleanup.failed" in kinds


def test_the_replay_tells_every_event_and_stops_at_as_of(api: Api, clock: Clock) -> None:
    run = api.start(shard_run(1, advance="manual"))
    middle = clock.now
    clock.advance(60)
    tick(api.rl)
    assert api.post(f"/admin/events/runs/{run}/abort", json={"reason": "storm"}).is_success
    whole = api.get(f"/admin/events/runs/{run}/replay", "viewer").json()
    assert whole["run_status"] == "aborted"
    assert [line["event"] for line in whole["lines"]][:1] == ["Started"]
    assert "Aborted" in [line["event"] for line in whole["lines"]]
    then = api.get(
        f"/admin/events/runs/{run}/replay", "viewer", params={"as_of": middle.isoformat()}
    ).json()
    assert then["run_status"] == "running"
    assert "Aborted" not in [line["event"] for line in then["lines"]]
    assert len(then["lines"]) < len(whole["lines"])


def test_a_replay_as_of_before_the_run_began_is_404(api: Api, clock: Clock) -> None:
    run = api.start(shard_run(1, advance="manual"))
    params = {"as_of": "2000-01-01T00:00:00+00:00"}
    assert api.get(f"/admin/events/runs/{run}/replay", params=params).status_code == 404


def test_a_replay_as_of_a_time_without_a_zone_is_not_a_server_error(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    for as_of in ("2000-01-01T00:00:00", "9999-12-31T23:59:59"):
        answer = api.get(f"/admin/events/runs/{run}/replay", params={"as_of": as_of})
        assert answer.status_code in (200, 404, 422), (as_of, answer.text)


def test_one_entry_and_its_history_version_by_version(api: Api, shard: Shard) -> None:
    shard.revert_answer = DOWN
    run = api.start(shard_run(1))
    tick(api.rl, 2)
    [failing] = entries_by_state(api.run(run))["failing"]
    entry_id = failing["entry_id"]
    one = api.get(f"/admin/entries/{entry_id}", "viewer").json()
    assert (one["run_id"], one["action"], one["state"]) == (str(run), SHARD_SPAWN, "failing")
    history = api.get(f"/admin/entries/{entry_id}/history", "viewer").json()
    assert history["total"] == one["version"] == len(history["frames"])
    assert [f["version"] for f in history["frames"]] == list(range(1, one["version"] + 1))
    assert history["frames"][-1]["state"]["last_error"] == "the shard is down"
    upto = api.get(f"/admin/entries/{entry_id}/history", params={"upto": 1}).json()
    assert [f["version"] for f in upto["frames"]] == [1]


def test_unknown_runs_and_entries_are_404_and_malformed_ids_422(api: Api) -> None:
    unknown = uuid4()
    for path in (
        f"/admin/events/runs/{unknown}",
        f"/admin/events/runs/{unknown}/log",
        f"/admin/events/runs/{unknown}/replay",
        f"/admin/entries/{unknown}",
        f"/admin/entries/{unknown}/history",
    ):
        answer = api.get(path, "viewer")
        assert answer.status_code == 404, (path, answer.text)
        assert str(unknown) in answer.json()["detail"]
    for path in ("/admin/events/runs/not-a-run", "/admin/entries/12345/history"):
        answer = api.get(path, "viewer")
        assert answer.status_code == 422, (path, answer.text)
        assert answer.json()["detail"][0]["loc"][0] == "path"

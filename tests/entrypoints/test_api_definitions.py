"""Definitions (W5) through the real app, on SQLite and PostgreSQL: the walk an operator makes
(create, verify, publish, schedule; the runner starts it), names from the token, and the
refusals: 401, 403, 404, 409, and 422 naming the field."""

from __future__ import annotations

from typing import Any

from tests.support.api_support import (
    SHARD_SPAWN,
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
    tick,
)
from tests.support.playing import Clock

DEFS = "/admin/definitions"


def created(api: Api, name: str = "fair", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = api.post(DEFS, "operator", json={"name": name, "spec": spec or shard_run(2)})
    assert answer.status_code == 201, answer.text
    found: dict[str, Any] = answer.json()
    return found


def ok(answer: Any, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def test_the_w5_walk_over_http_stamps_the_version_and_its_run(api: Api, clock: Clock) -> None:
    draft = created(api)
    assert (draft["name"], draft["created_by"], draft["versions"]) == ("fair", "alice", [])
    clock.advance(60)
    verified = ok(api.post(f"{DEFS}/fair/verify", "operator"))
    assert verified["draftRecorded"] is True and verified["problems"] == []
    assert (verified["reviewer"], verified["fingerprint"]) == ("alice", draft["fingerprint"])
    verified_at = verified["at"]
    clock.advance(60)
    published = ok(api.post(f"{DEFS}/fair/publish", "admin"))
    assert (published["version"], published["verified"]) == (1, True)
    assert (published["verified_by"], published["verified_at"]) == ("alice", verified_at)
    assert published["repinned"] == []
    at = (clock.now.replace(microsecond=0)).isoformat()
    occurrence = ok(api.post(f"{DEFS}/fair/occurrences", "operator", json={"at": at}), 201)
    assert (occurrence["state"], occurrence["version"]) == ("scheduled", 1)
    assert occurrence["verified"] == {"by": "alice", "at": verified_at}
    assert occurrence["scheduled_by"] == "alice"
    tick(api.rl)
    started = ok(api.get(f"/admin/occurrences/{occurrence['occurrence_id']}", "viewer"))
    assert started["state"] == "started" and started["started_by"] == "w1"
    run = api.run(started["run_id"])["run"]
    assert run["origin"] == {
        "definition": "fair",
        "version": 1,
        "occurrence_id": occurrence["occurrence_id"],
        "verified_by": "alice",
        "verified_at": verified_at,
    }
    listed = ok(api.get("/admin/events/runs", "viewer"))["items"]
    assert [r["origin"]["definition"] for r in listed] == ["fair"]


def test_an_edit_then_publish_says_unverified_and_repins_the_waiting_occurrence(
    api: Api, clock: Clock
) -> None:
    created(api)
    ok(api.post(f"{DEFS}/fair/verify", "operator"))
    ok(api.post(f"{DEFS}/fair/publish", "operator"))
    later = (clock.now.replace(microsecond=0)).isoformat().replace("+00:00", "Z")
    occurrence = ok(api.post(f"{DEFS}/fair/occurrences", "operator", json={"at": later}), 201)
    saved = ok(api.put(f"{DEFS}/fair/draft", "operator", json={"spec": shard_run(5)}))
    assert saved["changed"] is True and saved["revision"] == 2 and saved["draft_verified"] is None
    same = ok(api.put(f"{DEFS}/fair/draft", "operator", json={"spec": shard_run(5)}))
    assert same["changed"] is False and same["revision"] == 2
    published = ok(api.post(f"{DEFS}/fair/publish", "operator"))
    assert (published["version"], published["verified"], published["verified_by"]) == (
        2,
        False,
        None,
    )
    assert "published unverified" in published["message"]
    assert published["repinned"] == [occurrence["occurrence_id"]]
    again = ok(api.get(f"{DEFS}/fair/occurrences", "viewer"))["items"]
    assert [(o["version"], o["verified"]) for o in again] == [(2, None)]
    versions = ok(api.get(f"{DEFS}/fair/versions", "viewer"))["items"]
    assert [(v["version"], v["verified"] is not None) for v in versions] == [(1, True), (2, False)]
    first = ok(api.get(f"{DEFS}/fair/versions/1", "viewer"))
    assert first["spec"]["phases"][0]["steps"][0]["params"] == {"count": 2}
    detail = ok(api.get(f"{DEFS}/fair", "viewer"))
    assert [d["passed"] for d in detail["dry_runs"]] == [True]
    summary = ok(api.get(DEFS, "viewer"))["items"]
    assert [(d["name"], d["versions"], d["draft_verified"]) for d in summary] == [("fair", 2, None)]


def test_a_dry_run_with_problems_is_answered_and_recorded_naming_each_field(api: Api) -> None:
    bad = shard_run(2)
    bad["phases"][0]["steps"].append({"id": "ghost", "action": "nobody.home"})
    created(api, spec=bad)
    found = ok(api.post(f"{DEFS}/fair/verify", "operator"))
    assert found["draftRecorded"] is True and found["passed"] is False
    assert found["problems"] == ['phases.0.steps.1.action: no module registers "nobody.home"']
    assert ok(api.post(f"{DEFS}/fair/publish", "operator"))["verified"] is False


def test_refusals_say_401_403_404_409_and_422_naming_the_field(api: Api) -> None:
    assert api.post(DEFS, None, json={"name": "x", "spec": shard_run()}).status_code == 401
    assert api.post(DEFS, "viewer", json={"name": "x", "spec": shard_run()}).status_code == 403
    assert api.get(f"{DEFS}/nothing", "viewer").status_code == 404
    assert api.post(f"{DEFS}/nothing/verify", "operator").status_code == 404
    assert api.get("/admin/occurrences/00000000-0000-0000-0000-000000000000").status_code == 404
    created(api)
    assert api.get(f"{DEFS}/fair/versions/1", "viewer").status_code == 404
    again = api.post(DEFS, "operator", json={"name": "fair", "spec": shard_run()})
    assert again.status_code == 409 and "already exists" in again.json()["detail"]
    early = api.post(f"{DEFS}/fair/occurrences", "operator", json={"at": "2030-01-01T00:00:00Z"})
    assert early.status_code == 409 and "no published version" in early.json()["detail"]
    refused = api.client.post(
        DEFS,
        headers=api.headers("operator") | {"Content-Type": "application/json"},
        content='{"name": "inf", "spec": {"name": "x", "phases": [{"id": "p", "steps": '
        '[{"id": "s", "action": "shard.spawn", "params": {"count": 1e999}}]}]}}',
    )
    assert refused.status_code == 422, refused.text
    [infinite] = refused.json()["detail"]
    assert infinite["loc"] == ["body", "spec", "phases", 0, "steps", 0, "params", "count"]
    assert "inf is not a number a ledger can store" in infinite["msg"]
    bad_step = shard_run()
    bad_step["phases"][0]["steps"][0]["id"] = "<script>alert(1)</script>"
    named = api.post(DEFS, "operator", json={"name": "xss", "spec": bad_step})
    assert named.status_code == 422
    [detail] = named.json()["detail"]
    assert detail["loc"] == ["body", "spec", "phases", 0, "steps", 0, "id"]
    bad_name = api.post(DEFS, "operator", json={"name": "no spaces", "spec": shard_run()})
    assert bad_name.status_code == 422 and bad_name.json()["detail"][0]["loc"] == ["body", "name"]
    naive = api.post(f"{DEFS}/fair/occurrences", "operator", json={"at": "2030-01-01T00:00:00"})
    assert naive.status_code == 422 and naive.json()["detail"][0]["loc"] == ["body", "at"]
    ok(api.post(f"{DEFS}/fair/publish", "operator"))
    past = api.post(f"{DEFS}/fair/occurrences", "operator", json={"at": "2001-01-01T00:00:00Z"})
    assert past.status_code == 409 and past.json()["detail"].startswith("at: "), past.text


def test_cancelling_an_occurrence_is_done_once_in_the_token_s_name(api: Api) -> None:
    created(api)
    ok(api.post(f"{DEFS}/fair/publish", "operator"))
    occurrence = ok(
        api.post(f"{DEFS}/fair/occurrences", "operator", json={"at": "2030-01-01T00:00:00Z"}), 201
    )
    path = f"/admin/occurrences/{occurrence['occurrence_id']}/cancel"
    cancelled = ok(api.post(path, "operator"))
    assert (cancelled["state"], cancelled["cancelled_by"]) == ("cancelled", "alice")
    twice = api.post(path, "operator")
    assert twice.status_code == 409 and "was cancelled" in twice.json()["detail"]
    listed = ok(api.get("/admin/occurrences", "viewer", params={"state": "cancelled"}))["items"]
    assert [o["occurrence_id"] for o in listed] == [occurrence["occurrence_id"]]
    assert ok(api.get("/admin/occurrences", "viewer", params={"state": "scheduled"}))["items"] == []
    assert (
        SHARD_SPAWN
        in ok(api.get(f"{DEFS}/fair", "viewer"))["draft"]["phases"][0]["steps"][0]["action"]
    )

"""Every 201 says where what it made is read (`Location`), and a repeat under the same
Idempotency-Key says it again; the place answers 200 with the thing made."""

from __future__ import annotations

from typing import Any

from httpx import Response

from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)

DEFS = "/admin/definitions"


def made(api: Api, path: str, body: dict[str, Any], key: str | None = None) -> Response:
    headers = api.headers("admin") | ({"Idempotency-Key": key} if key else {})
    answer: Response = api.client.post(path, headers=headers, json=body)
    assert answer.status_code == 201, answer.text
    return answer


def read_back(api: Api, answer: Response) -> dict[str, Any]:
    there = api.get(answer.headers["location"])
    assert there.status_code == 200, (answer.headers["location"], there.text)
    found: dict[str, Any] = there.json()
    return found


def test_each_201_locates_what_it_made(api: Api) -> None:
    started = made(api, "/admin/events/runs", shard_run(1, advance="manual"))
    assert read_back(api, started)["run"] == started.json()["run"]
    created = made(api, DEFS, {"name": "fair", "spec": shard_run(1)})
    assert created.headers["location"] == f"{DEFS}/fair"
    assert read_back(api, created)["definition_id"] == created.json()["definition_id"]
    assert api.post(f"{DEFS}/fair/publish", "operator").is_success
    scheduled = made(api, f"{DEFS}/fair/occurrences", {"at": "2030-01-01T00:00:00Z"})
    assert read_back(api, scheduled) == scheduled.json()
    issued = made(api, "/admin/tokens", {"name": "bob", "role": "viewer"})
    token = read_back(api, issued)
    assert (token["token_id"], token["name"]) == (issued.json()["token_id"], "bob")
    assert "secret" not in token


def test_a_repeat_under_its_key_locates_the_same_thing(api: Api) -> None:
    first = made(api, "/admin/events/runs", shard_run(1, advance="manual"), key="run-1")
    again = made(api, "/admin/events/runs", shard_run(1, advance="manual"), key="run-1")
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["location"] == first.headers["location"]
    body = {"at": "2030-01-01T00:00:00Z"}
    assert made(api, DEFS, {"name": "fair", "spec": shard_run(1)}, key="d").is_success
    assert api.post(f"{DEFS}/fair/publish", "operator").is_success
    once = made(api, f"{DEFS}/fair/occurrences", body, key="o")
    assert (
        made(api, f"{DEFS}/fair/occurrences", body, key="o").headers["location"]
        == (once.headers["location"])
    )


def test_an_unknown_or_revoked_token_is_404(api: Api) -> None:
    answer = api.get("/admin/tokens/00000000-0000-0000-0000-000000000000")
    assert answer.status_code == 404 and answer.json()["detail"].startswith("no token ")
    issued = made(api, "/admin/tokens", {"name": "bob", "role": "viewer"})
    assert api.delete(issued.headers["location"]).status_code == 200
    gone = api.get(issued.headers["location"])
    assert gone.status_code == 404 and " was revoked at " in gone.json()["detail"]
    [bob] = [t for t in api.get("/admin/tokens").json()["items"] if t["name"] == "bob"]
    assert bob["revoked_at"] is not None

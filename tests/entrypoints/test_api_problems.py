"""Every API error is RFC 9457 problem details (`application/problem+json`) keeping `detail` as
clients read it; a 405 says every method its path takes in `Allow`, OPTIONS answers 204 with
it; the console's errors stay pages."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from fastapi.testclient import TestClient

from runledger.application.api.problems import PROBLEM_JSON
from runledger.application.asgi import create_app
from runledger.application.reading.fleet import FleetAnswers
from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)

RUNS = "/admin/events/runs"


def problem(answer: Any, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON, answer.headers
    body: dict[str, Any] = answer.json()
    assert (body["type"], body["status"]) == ("about:blank", status), body
    assert body["title"] and body["detail"], body
    return body


def test_each_refusal_is_a_problem_keeping_its_detail(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    unknown = api.get(f"{RUNS}/{uuid4()}", "viewer")
    assert problem(unknown, 404)["detail"].startswith("no run ")
    anonymous = api.get(RUNS, None)
    assert "bearer token" in problem(anonymous, 401)["detail"]
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert problem(api.post(f"{RUNS}/{run}/advance", "viewer"), 403)["title"] == "Forbidden"
    assert api.post(f"{RUNS}/{run}/abort", "operator", json={"reason": "storm"}).is_success
    assert problem(api.post(f"{RUNS}/{run}/abort", "operator", json={"reason": "x"}), 409)
    [field] = problem(api.get(RUNS, "viewer", params={"limit": 0}), 422)["detail"]
    assert field["loc"] == ["query", "limit"]
    assert problem(api.get("/admin/nothing-here"), 404)["detail"] == "Not Found"


def test_a_repeat_refused_under_an_idempotency_key_is_a_problem_too(api: Api) -> None:
    key = {**api.headers("admin"), "Idempotency-Key": "bob-1"}
    body = {"name": "bob", "role": "viewer"}
    assert api.client.post("/admin/tokens", headers=key, json=body).status_code == 201
    again = api.client.post("/admin/tokens", headers=key, json=body)
    assert "is shown once" in problem(again, 409)["detail"]


def test_a_405_names_every_method_of_its_path_and_options_says_them(api: Api) -> None:
    for method, path, allowed in (
        ("PUT", "/admin/tokens", "GET, OPTIONS, POST"),
        ("DELETE", RUNS, "GET, OPTIONS, POST"),
        ("POST", f"{RUNS}/{uuid4()}", "GET, OPTIONS"),
        ("POST", "/healthz", "GET, OPTIONS"),
    ):
        refused = api.client.request(method, path, headers=api.headers("admin"))
        assert problem(refused, 405)["detail"] == "Method Not Allowed"
        assert refused.headers["allow"] == allowed, (method, path)
        options = api.client.options(path)
        assert (options.status_code, options.headers["allow"]) == (204, allowed), path
        assert options.content == b""


def test_options_of_no_such_path_is_404_and_the_console_s_errors_stay_pages(api: Api) -> None:
    assert api.client.options("/admin/nothing-here").status_code == 404
    page = api.client.delete("/runs")
    assert page.status_code == 405 and page.headers["content-type"].startswith("text/html")
    assert page.headers["allow"] == "GET, OPTIONS"
    assert api.client.options("/runs").headers["allow"] == "GET, OPTIONS"


def test_a_server_failure_is_a_problem_without_a_traceback(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_: FleetAnswers) -> None:
        raise RuntimeError("SECRET internals")

    monkeypatch.setattr(FleetAnswers, "projections", broken)
    client = TestClient(create_app(api.rl), raise_server_exceptions=False)
    failed = client.get("/admin/projections", headers=api.headers("viewer"))
    assert "its log says why" in problem(failed, 500)["detail"]
    assert "SECRET" not in failed.text and "Traceback" not in failed.text

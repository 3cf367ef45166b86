"""The document is as strict as the checks behind it: the rules a request meets (a name's
characters, the Idempotency-Key's, text without NUL, a param's value, a reason that says
something) are in the schemas, and what the server refuses beyond them is the state of things
(409), not the request's form."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runledger.application.api.once import KEY_PATTERN
from runledger.domain.spec import NAME
from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)

DOCUMENT = json.loads(
    (Path(__file__).resolve().parents[2] / "openapi.json").read_text(encoding="utf-8")
)
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]


def test_the_rules_are_in_the_schemas() -> None:
    assert SCHEMAS["NewDefinition"]["properties"]["name"]["pattern"] == NAME
    assert re.fullmatch(SCHEMAS["NewToken"]["properties"]["name"]["pattern"], "  ") is None
    reason = SCHEMAS["Abort"]["properties"]["reason"]["pattern"]
    assert re.fullmatch(reason, "a\x00") is None and re.fullmatch(reason, "\t \x1e") is None
    integer = SCHEMAS["StoredValue"]["anyOf"][1]
    assert (integer["minimum"], integer["maximum"]) == (-(2**63 - 1), 2**63 - 1)
    start = DOCUMENT["paths"]["/admin/events/runs"]["post"]
    [key] = [p for p in start["parameters"] if p["name"] == "Idempotency-Key"]
    assert (key["schema"]["pattern"], key["schema"]["maxLength"]) == (KEY_PATTERN, 200)
    assert "409" in start["responses"] and "429" in start["responses"]


def test_what_the_key_s_pattern_refuses_the_server_refuses_naming_the_header(api: Api) -> None:
    for key in ("caf\xe9", " "):
        assert re.fullmatch(KEY_PATTERN, key) is None
        answer = api.client.post(
            "/admin/events/runs",
            headers={**api.headers("operator"), "Idempotency-Key": key.encode("latin-1")},
            json=shard_run(1),
        )
        assert answer.status_code == 422, (key, answer.text)
        assert answer.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]


def test_a_reason_of_spaces_the_pattern_refuses_the_server_refuses(api: Api) -> None:
    run = api.start(shard_run(1, advance="manual"))
    answer = api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "\t \x1e"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["msg"] == "reason: must not be empty"


def test_a_number_is_not_a_time_in_a_cleanup_filter(api: Api) -> None:
    answer = api.post("/admin/events/cleanup/plan", "viewer", json={"ended_before": 0})
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"][0]["loc"] == ["body", "ended_before"]


def test_a_value_past_64_bits_in_params_is_refused_as_the_document_says(api: Api) -> None:
    spec = shard_run(1)
    spec["phases"][0]["steps"][0]["params"] = {"count": -(2**63)}
    answer = api.post("/admin/definitions", "operator", json={"name": "big", "spec": spec})
    assert answer.status_code == 422, answer.text
    assert "beyond 64 bits" in answer.json()["detail"][0]["msg"]


def test_a_time_no_datetime_holds_in_utc_is_the_clock_s_refusal_not_a_500(api: Api) -> None:
    created = api.post("/admin/definitions", "operator", json={"name": "d", "spec": shard_run(1)})
    assert created.status_code == 201, created.text
    assert api.post("/admin/definitions/d/publish", "operator").is_success
    for at in ("0001-01-01T00:00:00+00:08", "9999-12-31T23:59:59-00:08"):
        answer = api.post("/admin/definitions/d/occurrences", "operator", json={"at": at})
        assert answer.status_code == 409, (at, answer.text)
        assert answer.json()["detail"].startswith("at: "), answer.text

"""A spec's number of seconds is a number (the long schemathesis run found `after_s: false`
accepted and read as 0): the API refuses anything else with a 422 naming the field."""

from __future__ import annotations

import pytest

from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)


@pytest.mark.parametrize("value", [False, "5"])
def test_a_wait_that_is_not_a_number_is_a_422_naming_the_field(api: Api, value: object) -> None:
    spec = shard_run(1)
    spec["phases"][0]["after_s"] = value
    answer = api.post("/admin/events/runs", "operator", json=spec)
    assert answer.status_code == 422, answer.text
    refused = answer.json()["detail"][0]
    assert refused["loc"] == ["body", "phases", 0, "after_s"], refused
    assert refused["msg"] == "phases.0.after_s: must be a number", refused
    assert api.get("/admin/events/runs", "viewer").json()["items"] == []

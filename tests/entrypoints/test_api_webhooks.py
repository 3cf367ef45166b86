"""Webhooks through the API, on an SQLite file and on PostgreSQL: an admin adds one (its secret
once, `Location`), lists, disables, removes it; a hostile URL is a 4xx naming the field; an
aborted run is delivered to a real receiver and its attempts are listed."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import pytest

from runledger.application.runledger import Runledger
from tests.support.api_support import (
    Api,
    Opener,
    Shard,
    api_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)
from tests.support.receiver import LOCAL, receiving

HOOKS = "/admin/webhooks"


@pytest.fixture(name="api_rl")
def webhooks_api_rl(opened: Opener, shard: Shard) -> Runledger:
    """api_support's runledger, allowed to send to the receivers on 127.0.0.1."""
    return opened(retry_delays_s=(60.0,), max_revert_attempts=2, webhook_allow_networks=LOCAL)


def names(answer: Any, field: str) -> bool:
    """Whether a refusal names ``field``: in a 422's locations, or in a sentence."""
    detail = answer.json()["detail"]
    if isinstance(detail, list):
        return any(field in problem["loc"] for problem in detail)
    return field in detail


def add(api: Api, url: str, events: list[str] | None = None) -> dict[str, Any]:
    answer = api.post(HOOKS, json={"url": url, "events": events or ["run.aborted"]})
    assert answer.status_code == 201, answer.text
    assert answer.headers["Location"] == f"{HOOKS}/{answer.json()['subscription_id']}"
    found: dict[str, Any] = answer.json()
    return found


def test_an_admin_adds_lists_disables_and_removes_a_webhook(api: Api) -> None:
    added = add(api, "https://example.com/hook", ["run.aborted", "runner.gone"])
    assert added["secret"].startswith("whsec_") and added["enabled"] is True
    assert added["added_by"] == "root"
    [listed] = api.get(HOOKS).json()["items"]
    assert "secret" not in listed and listed["events"] == ["run.aborted", "runner.gone"]
    one = f"{HOOKS}/{added['subscription_id']}"
    assert (
        api.client.patch(one, headers=api.headers("admin"), json={"enabled": False}).json()[
            "enabled"
        ]
        is False
    )
    assert api.get(one).json()["enabled"] is False
    assert api.delete(one).status_code == 200
    assert api.get(one).status_code == 404
    assert api.delete(one).status_code == 404
    assert api.get(HOOKS).json()["items"] == []


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/hook",
        "http://user:pw@example.com/hook",
        "http://example.com/a\x00b",
        "http://example.com/\r\nX-Evil: 1",
        "http://example.com:99999999/",
        "https://example.com/" + "a" * 3000,
        "<script>alert(1)</script>",
        12,
        None,
    ],
)
def test_a_hostile_url_is_a_4xx_naming_the_field(api: Api, url: object) -> None:
    answer = api.post(HOOKS, json={"url": url, "events": ["run.aborted"]})
    assert 400 <= answer.status_code < 500, answer.text
    assert names(answer, "url")
    assert api.get(HOOKS).json()["items"] == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:10.0.0.1]/",
        "http://0x7f000002:8080/",
    ],
)
def test_a_url_into_a_network_only_runledger_reaches_is_a_422_saying_why(
    api: Api, url: str
) -> None:
    answer = api.post(HOOKS, json={"url": url, "events": ["run.aborted"]})
    assert answer.status_code == 422 and names(answer, "url")
    assert "address" in answer.text and "RUNLEDGER_WEBHOOK_ALLOW_NETWORKS" in answer.text
    assert api.get(HOOKS).json()["items"] == []


@pytest.mark.parametrize("events", [[], ["run.exploded"], "run.aborted", ["run.aborted"] * 5])
def test_unknown_events_are_a_4xx(api: Api, events: object) -> None:
    answer = api.post(HOOKS, json={"url": "https://example.com/", "events": events})
    assert answer.status_code == 422 and names(answer, "events")


def test_a_viewer_and_an_operator_may_not_see_webhooks(api: Api) -> None:
    assert api.get(HOOKS, "viewer").status_code == 403
    assert (
        api.post(
            HOOKS, "operator", json={"url": "https://x.org/", "events": ["run.aborted"]}
        ).status_code
        == 403
    )


def test_an_aborted_run_is_delivered_and_its_attempts_are_listed(api: Api) -> None:
    with receiving(503) as receiver:
        added = add(api, receiver.url)
        run = api.start(shard_run(1, advance="manual"))
        answer = api.post(f"/admin/events/runs/{run}/abort", "operator", json={"reason": "x"})
        assert answer.status_code == 200, answer.text
        sender = api.rl.sender("w1")
        assert sender.send_due() == 1
        deliveries = f"{HOOKS}/{added['subscription_id']}/deliveries"
        [pending] = api.get(deliveries).json()["items"]
        assert pending["state"] == "pending" and pending["attempts"][0]["status"] == 503
    [got] = receiver.received
    assert json.loads(got.body)["run_id"] == str(run)
    assert pending["body"]["run_id"] == str(run)
    assert api.get(f"{HOOKS}/{uuid4()}/deliveries").status_code == 404

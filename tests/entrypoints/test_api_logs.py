"""The process's log as RUNLEDGER_LOG_FORMAT=json writes it, on an SQLite file and on PostgreSQL:
one JSON object per request (route, status, actor, duration) and per tick that did work, and
nothing for an idle tick."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from uuid import uuid4

import pytest

from runledger.application.telemetry import JsonLines
from tests.support.api_support import (
    PEOPLE,
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
    tick,
)

Lines = list[dict[str, Any]]


class Written(logging.Handler):
    """Each record as JsonLines writes it, parsed back: a line that is not one object fails."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonLines())
        self.lines: Lines = []

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        assert "\n" not in text
        self.lines.append(json.loads(text))


@pytest.fixture
def logged() -> Iterator[Lines]:
    handler = Written()
    telemetry = logging.getLogger("runledger.telemetry")
    level = telemetry.level
    telemetry.addHandler(handler)
    telemetry.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        telemetry.removeHandler(handler)
        telemetry.setLevel(level)


def said(lines: Lines, event: str) -> Lines:
    return [line for line in lines if line.get("event") == event]


def test_each_request_is_one_line_with_its_route_status_actor_and_duration(
    api: Api, logged: Lines
) -> None:
    run = api.start(shard_run(1, advance="manual"))
    api.get(f"/admin/events/runs/{run}", "viewer")
    api.get(f"/admin/events/runs/{uuid4()}", "viewer")
    api.get("/admin/events/runs", None)
    api.get("/admin/tokens", "operator")
    requests = said(logged, "http.request")
    shown = [(r["method"], r["route"], r["status"], r["actor"]) for r in requests]
    assert shown == [
        ("POST", "/admin/events/runs", 201, PEOPLE["operator"]),
        ("GET", "/admin/events/runs/{run_id}", 200, PEOPLE["viewer"]),
        ("GET", "/admin/events/runs/{run_id}", 404, PEOPLE["viewer"]),
        ("GET", "/admin/events/runs", 401, None),
        ("GET", "/admin/tokens", 403, PEOPLE["operator"]),
    ]
    for request in requests:
        assert isinstance(request["ms"], float) and request["ms"] >= 0
        assert request["time"].endswith("Z")
        assert datetime.fromisoformat(request["time"]).utcoffset() is not None


def test_a_tick_that_did_work_is_one_line_and_an_idle_tick_is_none(api: Api, logged: Lines) -> None:
    tick(api.rl, 3)
    assert said(logged, "runner.tick") == []
    api.start(shard_run(2))
    logged.clear()
    tick(api.rl)
    [worked] = said(logged, "runner.tick")
    counts = ("dispatched", "completed", "given_back", "failed")
    assert {k: worked[k] for k in counts} == {
        "dispatched": 1,
        "completed": 1,
        "given_back": 2,
        "failed": 0,
    }
    tick(api.rl, 3)
    assert len(said(logged, "runner.tick")) == 1

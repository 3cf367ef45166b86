"""A read's answer written by the route (api/answered.py) is the one FastAPI would have written
from the same model: same bytes, same type, hostile values included."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from uuid import uuid4

from fastapi import FastAPI
from fastapi.testclient import TestClient

from runledger.application.api.answered import Answered
from runledger.application.reading.schemas.runs import LogLine, LogLines

AT = datetime(2026, 12, 6, tzinfo=UTC)


def hostile_lines() -> LogLines:
    detail = {"nan": math.nan, "inf": -math.inf, "nul": "a\x00b", "markup": "<b>&</b>"}
    line = LogLine(position=1, at=AT, kind="run.started", detail=detail)
    return LogLines(run_id=uuid4(), items=[line], total=1, next_cursor=None)


def test_an_answer_written_by_the_route_is_the_one_fastapi_writes_from_its_model() -> None:
    lines = hostile_lines()
    app = FastAPI()

    @app.get("/theirs", response_model=LogLines)
    def theirs() -> LogLines:
        return lines

    @app.get("/ours", response_model=LogLines)
    def ours() -> Answered:
        return Answered(lines)

    client = TestClient(app)
    mine, fastapis = client.get("/ours"), client.get("/theirs")
    assert mine.status_code == fastapis.status_code == 200
    assert mine.content == fastapis.content
    assert mine.headers["content-type"] == fastapis.headers["content-type"]
    assert mine.json()["items"][0]["detail"] == {
        "nan": None,
        "inf": None,
        "nul": "a\x00b",
        "markup": "<b>&</b>",
    }

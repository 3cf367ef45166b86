"""What --json prints: the HTTP API's response models, and for the few commands the API has no
route for, models made the same way (on the API's Answer, from its pieces)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

from runledger.application.display import json_text
from runledger.application.reading.schemas import runs
from runledger.application.reading.schemas.common import Answer


def print_json(answer: BaseModel | Sequence[BaseModel]) -> None:
    """One answer (or a list of them, as the API's list routes answer) as JSON on stdout."""
    if isinstance(answer, BaseModel):
        print(json_text(answer.model_dump(mode="json")))
    else:
        print(json_text([one.model_dump(mode="json") for one in answer]))


class RunLog(Answer):
    """`log RUN`: GET /admin/events/runs/{id} and GET /admin/events/runs/{id}/log together."""

    run: runs.RunDetail
    log: runs.LogPage


class Advance(Answer):
    """What a tick's advance leg did."""

    runs: int
    dispatched: int
    succeeded: int
    failed: int
    phases_advanced: int
    completed: int
    aborted: int


class Tick(Answer):
    """`tick`: the runs the start leg started from due occurrences, the advance leg, then a
    cleanup summary per run the sweep worked."""

    worker: str
    started: list[UUID] = Field(default_factory=list)
    advance: Advance
    swept: list[runs.CleanupSummary]


class Difference(Answer):
    table: str
    key: str
    live: Any
    rebuilt: Any


class Rebuilt(Answer):
    """`rebuild`: what was rebuilt (or only verified), how fast, and what differed."""

    views: list[str]
    verified: bool
    events: int
    seconds: float
    events_per_second: float
    position: int
    differences: list[Difference]


class Ready(Answer):
    """`init`: the store whose tables exist now."""

    store: str


class Thing(Answer):
    ref: str
    kind: str


class World(Answer):
    """`sandbox show`."""

    things: list[Thing]
    weather: dict[str, str | None]


class Changed(Answer):
    """`sandbox fault`, `set`, `vanish` and `restart`: what was changed in the world."""

    change: str
    target: str | None = None
    value: Any = None
    done: bool = True


class SignedIn(Answer):
    """`login`: the context saved, and who its token speaks for (never the token)."""

    context: str
    server: str
    name: str
    role: str


class Context(Answer):
    """`context list` and `context use`: a saved context, never its token."""

    name: str
    server: str
    current: bool


class Unset(Answer):
    """`context unset`: no context is current."""

    current: None

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from runledger.application.reading.schemas.common import Answer, Page


class Module(Answer):
    name: str | None
    folder: str
    site: str | None
    status: str
    reason: str | None
    actions: list[str]
    leases: list[str]


class Reconciled(Answer):
    """What a module said of its live entries when an admin asked."""

    module: str
    asked: int
    in_force: int
    orphaned: int
    expired: int
    unanswered: int


class Runner(Answer):
    runner_id: UUID
    worker: str
    host: str
    pid: int
    state: str
    modules: list[str]
    actions: list[str]
    leases: list[str]
    started_at: datetime
    stopped_at: datetime | None
    last_beat: datetime | None


class Projection(Answer):
    name: str
    position: int
    lag: int
    stuck_at: int | None
    stuck_event: str | None = Field(
        default=None, description="the event it cannot apply: topic, originator and version"
    )
    error: str | None


class Health(Answer):
    status: str


class Check(Answer):
    name: str
    ok: bool
    detail: str


class Readiness(Answer):
    ready: bool
    checks: list[Check]


class ModulePage(Page[Module]):
    pass


class RunnerPage(Page[Runner]):
    pass


class ProjectionPage(Page[Projection]):
    pass

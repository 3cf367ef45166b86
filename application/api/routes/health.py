"""Liveness, readiness and metrics: open to the load balancer and the scraper, no token. Without
one, readiness says only ready or not; what the store is and why a check failed are for a
token's holder (any role)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from runledger.application.api.deps import Credentials, checked
from runledger.application.deps import BrakeDep, ProjectorDep, SettingsDep
from runledger.application.errors import RETRY_AFTER_S, STORE_ERRORS, RunledgerError
from runledger.application.forwarded import ClientAddress
from runledger.application.reading.schemas import fleet
from runledger.application.runledger import Runledger
from runledger.application.services.tokens import Actor, Tokens
from runledger.application.settings import Settings
from runledger.application.store.url import store_config
from runledger.domain.text import safe_text
from runledger.projections.read_model import ReadModel
from runledger.projections.tokens import TokenRows

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=fleet.Health)
def healthz() -> fleet.Health:
    """The process is up and answering."""
    return fleet.Health(status="ok")


class Ready(BaseModel):
    """Readiness as anyone may read it: ready or not, nothing about the store."""

    ready: bool


READINESS = fleet.Readiness | Ready


@router.get(
    "/readyz",
    response_model=READINESS,
    responses={503: {"model": READINESS}},
    openapi_extra={"security": [{}]},  # with the bearer scheme: a token is optional here
)
def readyz(
    request: Request,
    projector: ProjectorDep,
    settings: SettingsDep,
    brake: BrakeDep,
    address: ClientAddress,
    credentials: Credentials,
) -> JSONResponse:
    """The store answers, no projection is stuck, and none is more than RUNLEDGER_READY_LAG
    events behind (10,000 unless set). With a valid bearer token (any role), each check and
    its detail; without one, only `ready`."""
    rl: Runledger = request.app.state.rl
    checks = [_store(projector, settings)]
    if checks[0].ok:
        checks.append(_projections(projector, rl.fresh, settings.ready_lag))
    ready = fleet.Readiness(ready=all(c.ok for c in checks), checks=checks)
    holder = checked(brake, address, credentials, _as_the_view_stands(rl))
    said = ready if holder is not None else Ready(ready=ready.ready)
    if ready.ready:
        return JSONResponse(said.model_dump(mode="json"))
    # Not ready is a 503 like the store's trouble anywhere else, with the same wait.
    retry = {"Retry-After": str(RETRY_AFTER_S)}
    return JSONResponse(said.model_dump(mode="json"), status_code=503, headers=retry)


def _as_the_view_stands(rl: Runledger) -> Callable[[str], Actor | None]:
    """Tokens read from their view as it stands, never caught up first: a probe applies
    nothing, and a stuck projection must not hide why from a token's holder. A store that
    cannot say checks no token: the answer is then only `ready`."""
    tokens = Tokens(app=rl.app, rows=TokenRows(rl.backend, fresh=lambda: 0), clock=rl.clock)

    def identify(secret: str) -> Actor | None:
        try:
            return tokens.identify(secret)
        except (RunledgerError, *STORE_ERRORS):  # type: ignore[misc]
            return None

    return identify


def _store(projector: ReadModel, settings: Settings) -> fleet.Check:
    try:
        projector.positions()
    except (RunledgerError, *STORE_ERRORS) as error:  # type: ignore[misc]
        return fleet.Check(name="store", ok=False, detail=safe_text(str(error), 300))
    return fleet.Check(name="store", ok=True, detail=store_config(settings.database_url).display)


def _projections(projector: ReadModel, fresh: Callable[[], object], bound: int) -> fleet.Check:
    """Further behind than the bound is not ready, said at once: a probe never waits for a
    backlog to be applied. Within it, the views catch up first through the read hook, as every
    read does (on PostgreSQL, by the store's projector), which finds a stuck one."""
    behind = projector.behind()
    if behind <= bound:
        try:
            fresh()
        except (RunledgerError, *STORE_ERRORS) as error:  # type: ignore[misc]
            return fleet.Check(name="projections", ok=False, detail=safe_text(str(error), 300))
        behind = projector.behind()
    ok = behind <= bound
    return fleet.Check(name="projections", ok=ok, detail=f"{behind:,} events behind")


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def metrics(request: Request) -> Response:
    """Prometheus text format."""
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)

"""Liveness, readiness and metrics: open to the load balancer and the scraper, no token."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from runledger.application.deps import ProjectorDep, SettingsDep
from runledger.application.errors import STORE_ERRORS, RunledgerError
from runledger.application.reading.schemas import fleet
from runledger.application.settings import Settings, store_config
from runledger.domain.text import safe_text
from runledger.projections.read_model import ReadModel

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=fleet.Health)
def healthz() -> fleet.Health:
    """The process is up and answering."""
    return fleet.Health(status="ok")


@router.get("/readyz", response_model=fleet.Readiness, responses={503: {"model": fleet.Readiness}})
def readyz(projector: ProjectorDep, settings: SettingsDep) -> JSONResponse:
    """The store answers, no projection is stuck, and none is more than RUNLEDGER_READY_LAG
    events behind (10,000 unless set)."""
    checks = [_store(projector, settings)]
    if checks[0].ok:
        checks.append(_projections(projector, settings.ready_lag))
    ready = fleet.Readiness(ready=all(c.ok for c in checks), checks=checks)
    return JSONResponse(ready.model_dump(mode="json"), status_code=200 if ready.ready else 503)


def _store(projector: ReadModel, settings: Settings) -> fleet.Check:
    try:
        projector.positions()
    except (RunledgerError, *STORE_ERRORS) as error:  # type: ignore[misc]
        return fleet.Check(name="store", ok=False, detail=safe_text(str(error), 300))
    return fleet.Check(name="store", ok=True, detail=store_config(settings.database_url).display)


def _projections(projector: ReadModel, bound: int) -> fleet.Check:
    """Further behind than the bound is not ready, said at once: a probe never waits for a
    backlog to be applied. Within it, the views catch up first, which finds a stuck one."""
    behind = projector.behind()
    if behind <= bound:
        try:
            projector.catch_up()
        except RunledgerError as error:
            return fleet.Check(name="projections", ok=False, detail=safe_text(str(error), 300))
        behind = projector.behind()
    ok = behind <= bound
    return fleet.Check(name="projections", ok=ok, detail=f"{behind:,} events behind")


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def metrics(request: Request) -> Response:
    """Prometheus text format."""
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)

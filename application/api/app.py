"""The FastAPI application over one composition root: the API, and the console at /."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from prometheus_client import CollectorRegistry

from runledger import __version__
from runledger.application.api import errors
from runledger.application.api.metrics import StoreCollector
from runledger.application.api.routes import (
    bulk,
    definitions,
    entries,
    fleet,
    health,
    occurrences,
    runs,
)
from runledger.application.bootstrap import Runledger
from runledger.application.telemetry import say
from runledger.application.web import console

DESCRIPTION = """Everything an operator can do with runledger: runs, their entries and logs,
cleanup (one run, or a plan over many after an outage), history, definitions (drafts, dry runs,
verified versions) and their scheduled occurrences, modules, runners, projections.

Every route under /admin needs a bearer token (`runledger token create NAME --role R`): a
`viewer` reads, an `operator` also acts on runs, an `admin` also manages tokens. Every write is
recorded in the name the token carries."""


def routes() -> FastAPI:
    """The application's routes and schemas, bound to no store: what the OpenAPI document says."""
    app = FastAPI(title="runledger", version=__version__, description=DESCRIPTION)
    for router in (
        runs.router,
        bulk.router,
        entries.router,
        definitions.router,
        occurrences.router,
        fleet.router,
        health.router,
    ):
        app.include_router(router)
    errors.install(app)
    return app


def create_app(rl: Runledger) -> FastAPI:
    """The API over one composition root."""
    app = routes()
    app.state.rl = rl
    app.state.writes = threading.Lock()
    registry: CollectorRegistry = rl.telemetry.registry
    registry.register(StoreCollector(rl))
    app.state.metrics = registry
    console.install(app, rl)

    @app.middleware("http")
    async def log_request(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "(no route)")
        rl.telemetry.requests.labels(route=path, status=str(response.status_code)).inc()
        say(
            "http.request",
            method=request.method,
            route=path,
            status=response.status_code,
            actor=getattr(request.state, "actor", None),
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return response

    return app

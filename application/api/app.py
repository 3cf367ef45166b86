"""The FastAPI application over one composition root: the API, and the console at /."""

from __future__ import annotations

import threading

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from runledger import __version__
from runledger.application.api import errors
from runledger.application.api.metrics import StoreCollector
from runledger.application.api.request_log import RequestLog
from runledger.application.api.routes import (
    bulk,
    decisions,
    definitions,
    entries,
    fleet,
    health,
    occurrences,
    runs,
)
from runledger.application.bootstrap import Runledger
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
        decisions.router,
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

    app.add_middleware(RequestLog, rl=rl)
    return app

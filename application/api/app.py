"""The API: its routes, schemas and error answers as one FastAPI application (asgi.py serves
it beside the console)."""

from __future__ import annotations

from fastapi import FastAPI

from runledger import __version__
from runledger.application.api import docs, documented, errors
from runledger.application.api.allowed import Allowed
from runledger.application.api.routes import (
    bulk,
    decisions,
    definitions,
    entries,
    fleet,
    health,
    occurrences,
    runs,
    webhooks,
)
from runledger.application.routed import add_routes

DESCRIPTION = """Everything an operator can do with runledger: runs, their entries and logs,
cleanup (one run, or a plan over many after an outage), history, definitions (drafts, dry runs,
verified versions) and their scheduled occurrences, modules, runners, projections.

Every route under /admin needs a bearer token (`runledger token create NAME --role R`): a
`viewer` reads, an `operator` also acts on runs, an `admin` also manages tokens. Every write is
recorded in the name the token carries."""


def routes() -> FastAPI:
    """The application's routes and schemas, bound to no store: what the OpenAPI document says."""
    # Swagger UI is docs.py's, self-hosted under a CSP; FastAPI's own would load it from a CDN.
    app = FastAPI(
        title="runledger",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
    )
    for router in (
        runs.router,
        decisions.router,
        bulk.router,
        entries.router,
        definitions.router,
        occurrences.router,
        fleet.router,
        webhooks.router,
        health.router,
        docs.router,
    ):
        add_routes(app, router)
    errors.install(app)
    documented.install(app)
    app.add_middleware(Allowed, routes=lambda: app.routes)
    return app

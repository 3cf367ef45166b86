"""A router's routes added to an application as they were built when their module was imported.

FastAPI's ``include_router`` builds every route of the router again for each application it is
included in (the dependencies read from the endpoint's signature, the response model's
validator), on the application's first request. A process that makes more than one application
(each test of the API does; ``serve`` does once) paid that for its ~80 routes each time:
scripts/MEASUREMENTS.md, "The routes built once". The routers' own routes carry their prefix,
tags, responses and dependencies already (APIRouter.add_api_route merges them), hold nothing of
an application, and find the store through ``request.app`` on every request; so the same route
objects serve every application of the process.

What this leaves out of ``include_router``: a prefix or tags given at inclusion (none are: each
router says its own), an application's ``dependency_overrides`` (not used), and a router's own
startup, shutdown or lifespan (none has one; ``add_routes`` refuses such a router).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI


def add_routes(app: FastAPI, router: APIRouter) -> None:
    if router.on_startup or router.on_shutdown:
        raise ValueError("a router with startup or shutdown handlers needs include_router")
    app.router.routes.extend(router.routes)

"""The HTTP server's application: the API's routes and the console's pages side by side over
one composition root, with the metrics and the request log. `runledger serve` runs it."""

from __future__ import annotations

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from runledger.application.api.app import routes
from runledger.application.api.metrics import StoreCollector
from runledger.application.api.request_log import RequestLog
from runledger.application.fleet_metrics import FleetCollector, ModulesCollector
from runledger.application.moment import OneMoment
from runledger.application.runledger import Runledger
from runledger.application.web import console


def create_app(rl: Runledger) -> FastAPI:
    """The API and the console over one composition root."""
    app = routes()
    app.state.rl = rl
    registry: CollectorRegistry = rl.telemetry.registry
    registry.register(StoreCollector(rl))
    registry.register(FleetCollector(rl))
    registry.register(ModulesCollector(lambda: rl.modules))
    app.state.metrics = registry
    console.install(app, rl)

    app.add_middleware(OneMoment)
    app.add_middleware(
        RequestLog, requests=rl.telemetry.requests, durations=rl.telemetry.request_seconds
    )
    return app

"""One log line, one count and one duration per request, as plain ASGI: Starlette's
``@app.middleware("http")`` runs every request through a task group and memory streams of its
own, a large share of a simple read's time in the server (scripts/MEASUREMENTS.md, "Request log
as plain ASGI")."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runledger.application.telemetry import say


class RequestLog:
    def __init__(self, app: ASGIApp, requests: Counter, durations: Histogram) -> None:
        self.app = app
        self.requests = requests
        self.durations = durations

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]  # what the client sees if the app raises before it answers

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._said(scope, status[0], started)

    def _said(self, scope: Scope, status: int, started: float) -> None:
        seconds = time.perf_counter() - started
        # The route's template (/api/runs/{run_id}), never the raw path: a client's paths
        # would each make series of their own.
        route: Any = scope.get("route")
        path = getattr(route, "path", "(no route)")
        self.requests.labels(route=path, status=str(status)).inc()
        self.durations.labels(route=path).observe(seconds)
        state: Any = scope.get("state") or {}
        say(
            "http.request",
            method=scope.get("method"),
            route=path,
            status=status,
            actor=state.get("actor") if isinstance(state, dict) else None,
            ms=round(seconds * 1000, 2),
        )

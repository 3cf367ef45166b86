"""Each HTTP request reads at one moment, as plain ASGI: its reads share one catch-up, made
again after anything it saves (projections/fresh_reads.py). A read of a run page had asked
the store whether anything new had come three times (the token, the page, its rows)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from runledger.projections.fresh_reads import one_moment


class OneMoment:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with one_moment():
            await self.app(scope, receive, send)

"""What methods a path takes, said in `Allow`: on OPTIONS (204) and on every 405.

Starlette answers a 405 from the first route whose path matches, so a path served by two routes
(GET and POST of /admin/tokens) named only one's methods. The methods are those some route answers
at the path, the console's pages as the API's."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


class Allowed:
    def __init__(self, app: ASGIApp, routes: Callable[[], Sequence[BaseRoute]]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["method"] != "OPTIONS":
            await self.app(scope, receive, _with_allow(send, lambda: self._allow(scope)))
        elif (methods := self._allow(scope)) is None:
            await self.app(scope, receive, send)  # no such path: its 404
        else:
            headers = [(b"allow", methods.encode()), (b"content-length", b"0")]
            await send({"type": "http.response.start", "status": 204, "headers": headers})
            await send({"type": "http.response.body", "body": b""})

    def _allow(self, scope: Scope) -> str | None:
        """The methods some route answers at this path, asked of the routes as routing asks."""
        methods = {
            method
            for method in METHODS
            if any(r.matches({**scope, "method": method})[0] is Match.FULL for r in self.routes())
        }
        return ", ".join(sorted(methods | {"OPTIONS"})) if methods else None


def _with_allow(send: Send, allow: Callable[[], str | None]) -> Send:
    """``send``, with the path's methods in Allow on a 405 (worked out only then)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 405:
            methods = allow()
            if methods is not None:
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*kept, (b"allow", methods.encode())]}
        await send(message)

    return sending

"""The session cookie is Secure when the browser spoke https: to us directly, or to a trusted
proxy that says so (X-Forwarded-Proto), or always when RUNLEDGER_COOKIE_SECURE is set.

Starlette's SessionMiddleware decides https_only once for every request; a console reached both
over plain http (a laptop, a test) and behind TLS needs it per request, so this marks the
cookie on its way out."""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runledger.application.forwarded import over_https


class SecureCookie:
    def __init__(
        self, app: ASGIApp, *, cookie: str, always: bool, trusted: tuple[str, ...]
    ) -> None:
        self.app = app
        self.prefix = f"{cookie}=".encode()
        self.always = always
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not (
            self.always or over_https(HTTPConnection(scope), self.trusted)
        ):
            await self.app(scope, receive, send)
            return

        async def send_secure(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [self._secure(k, v) for k, v in message.get("headers", [])]
            await send(message)

        await self.app(scope, receive, send_secure)

    def _secure(self, name: bytes, value: bytes) -> tuple[bytes, bytes]:
        flags = [part.strip().lower() for part in value.split(b";")[1:]]
        if name.lower() != b"set-cookie" or not value.startswith(self.prefix) or b"secure" in flags:
            return name, value
        return name, value + b"; secure"

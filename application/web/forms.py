"""Console forms whose text is not UTF-8 are refused, naming the field, before a route reads
them: the form parser would put U+FFFD in place of each byte, and a reason would be stored as
"�����" in the person's name."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_plus, unquote_to_bytes

from fastapi import Request, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runledger.domain.text import safe_text

FORM = b"application/x-www-form-urlencoded"


def undecodable_field(body: bytes) -> str | None:
    """The name of the first field of a urlencoded body whose name or value is not UTF-8."""
    for pair in body.split(b"&"):
        name, _, value = pair.partition(b"=")
        for part in (name, value):
            try:
                unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError:
                return safe_text(unquote_plus(name.decode("latin-1")), 80) or "a field"
    return None


class Utf8Forms:
    """ASGI middleware: a form POST (to a path ``applies`` to) whose text is not UTF-8 is
    answered by ``refuse`` naming the field; any other request passes as it came."""

    def __init__(
        self,
        app: ASGIApp,
        refuse: Callable[[Request, str], Response],
        applies: Callable[[str], bool],
    ) -> None:
        self.app = app
        self.refuse = refuse
        self.applies = applies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._a_form(scope):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        more = True
        while more:
            message = await receive()
            messages.append(message)
            more = message["type"] == "http.request" and message.get("more_body", False)
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        field = undecodable_field(body)
        if field is not None:
            said = (
                f"{field}: the text sent is not UTF-8 (bytes a browser never sends for typed "
                "text), so nothing was done."
            )
            await self.refuse(Request(scope), said)(scope, receive, send)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _a_form(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        kind = dict(scope["headers"]).get(b"content-type", b"")
        return kind.split(b";")[0].strip().lower() == FORM and self.applies(scope["path"])

"""Console forms whose text is not UTF-8 are refused, naming the field, before a route reads
them: the form parser would put U+FFFD in place of each byte (urlencoded) or read the bytes as
Latin-1 (multipart), and a reason would be stored as "�����" in the person's name."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote_plus, unquote_to_bytes

from fastapi import Request, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runledger.domain.text import safe_text

FORM = b"application/x-www-form-urlencoded"
MULTIPART = b"multipart/form-data"
_NAME = re.compile(rb'name="([^"]*)"')
_BOUNDARY = re.compile(rb"boundary=([^;]+)")


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


def undecodable_part(body: bytes, boundary: bytes) -> str | None:
    """The name of the first text part of a multipart body that is not UTF-8 (a file is
    bytes, and its route says whether it takes them)."""
    for part in body.split(b"--" + boundary)[1:]:
        head, _, content = part.partition(b"\r\n\r\n")
        found = _NAME.search(head)
        if found is None or b"filename=" in head:
            continue
        try:
            content.removesuffix(b"\r\n").decode("utf-8")
        except UnicodeDecodeError:
            return safe_text(found.group(1).decode("latin-1"), 80) or "a field"
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
        field = self._undecodable(scope, body)
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
        return _kind(scope)[0] in (FORM, MULTIPART) and self.applies(scope["path"])

    def _undecodable(self, scope: Scope, body: bytes) -> str | None:
        kind, options = _kind(scope)
        if kind == FORM:
            return undecodable_field(body)
        boundary = _BOUNDARY.search(options)
        return undecodable_part(body, boundary.group(1).strip(b'"')) if boundary else None


def _kind(scope: Scope) -> tuple[bytes, bytes]:
    given = dict(scope["headers"]).get(b"content-type", b"")
    kind, _, options = given.partition(b";")
    return kind.strip().lower(), options

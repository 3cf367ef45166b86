"""The Idempotency-Key header of the routes that create or act (SPEC "Idempotent writes"). A
route hands ``Once`` its act and how to answer it: without the header that is all it does;
with it, the act runs once per person's key and every repeat of the
request is answered the first answer, status and body (services/once.py)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from contextlib import nullcontext
from typing import Annotated, Any, TypeVar
from uuid import UUID

from fastapi import Depends, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel

from runledger.application.api.problems import PROBLEM_JSON
from runledger.application.deps import OnceDep
from runledger.application.services.once import Answer, KeyedCall
from runledger.application.services.once import Once as Keys
from runledger.domain.keyed import MAX_KEY, key_problem

KEY_HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
"""Set on an answer given again from the key's record."""
KEY_PATTERN = r"^[!-~]([ -~]*[!-~])?$"
"""What the header may be: printable ASCII, at most MAX_KEY long; spaces only inside (HTTP
drops them around a header's value)."""
ABOUT_KEY = (
    f"Any text of up to {MAX_KEY} printable ASCII characters naming this request, e.g. a UUID. "
    "The same request again under the same key, from the same person, is answered the first "
    "answer (status and body; a start answers the same run) and changes nothing; another "
    "request under it is refused (409). Kept in the store for good."
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Keyed:
    """One request's act and answer, keyed or not."""

    def __init__(
        self, request: Request, response: Response, keys: Keys, key: str | None, body: bytes
    ) -> None:
        self.request = request
        self.response = response
        self.keys = keys
        self.key = key
        self.body = body

    @property
    def run_id(self) -> UUID | None:
        """The run a start under this key makes (None without a key: a new id)."""
        return None if self.key is None else self._call(self.key).run_id

    def __call__(
        self,
        act: Callable[[], T],
        answer: Callable[[T], M],
        withheld: Callable[[M], str] | None = None,
        located: Callable[[M], str] | None = None,
    ) -> M | Response:
        """``answer(act())``; ``withheld`` says why that answer may not be kept to give again,
        ``located`` where what a 201 made is read (its Location, on a repeat too)."""
        if self.key is None:
            model = answer(act())
            if located is not None:
                self.response.headers["Location"] = located(model)
            return model
        route: Any = self.request.scope.get("route")
        status = int(getattr(route, "status_code", None) or 200)

        def acted() -> Answer:
            model = answer(act())
            why = None if withheld is None else withheld(model)
            return Answer(status, model.model_dump_json(by_alias=True), why)

        kept = self._call(self.key).answer(nullcontext(), acted, self._refusal)
        headers = {REPLAYED: "true"} if kept.replayed else {}
        if located is not None and kept.status == 201:
            headers["Location"] = located(route.response_model.model_validate_json(kept.body))
        return Response(
            kept.body,
            status_code=kept.status,
            media_type=PROBLEM_JSON if kept.status >= 400 else "application/json",
            headers=headers,
        )

    def _call(self, key: str) -> KeyedCall:
        try:
            body: Any = json.loads(self.body) if self.body else None
        except ValueError:
            body = self.body.decode("latin-1")
        url = self.request.url
        path = f"{url.path}?{url.query}" if url.query else url.path
        by = str(getattr(self.request.state, "actor", ""))
        return self.keys.call(by, key, self.request.method, path, body)

    def _refusal(self, error: Exception) -> Answer | None:
        """What the API answers ``error``, by its own handler (errors.py)."""
        handlers = self.request.app.exception_handlers
        handler = next((handlers[c] for c in type(error).__mro__ if c in handlers), None)
        if handler is None or inspect.iscoroutinefunction(handler):
            return None
        said = handler(self.request, error)
        if not isinstance(said, Response):
            return None
        return Answer(said.status_code, bytes(said.body).decode("utf-8"))


async def keyed(
    request: Request,
    response: Response,
    keys: OnceDep,
    key: Annotated[
        str | None,
        Header(
            alias=KEY_HEADER,
            description=ABOUT_KEY,
            json_schema_extra={"pattern": KEY_PATTERN, "maxLength": MAX_KEY},
        ),
    ] = None,
) -> Keyed:
    if key is not None and (problem := _key_problem(key)) is not None:
        raise RequestValidationError(
            [
                {
                    "loc": ("header", KEY_HEADER),
                    "msg": f"{KEY_HEADER} {problem}",
                    "type": "value_error",
                }
            ]
        )
    return Keyed(request, response, keys, key, await request.body() if key is not None else b"")


def _key_problem(key: str) -> str | None:
    """The store's rule for a key (domain/keyed.py), and a header's: printable ASCII (a header
    is read as Latin-1, so other text would arrive as something else)."""
    problem = key_problem(key)
    if problem is None and not key.isascii():
        return "must be printable ASCII"
    return problem


Once = Annotated[Keyed, Depends(keyed)]

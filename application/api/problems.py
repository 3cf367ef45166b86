"""Every error the API answers, as RFC 9457 problem details (`application/problem+json`).

`detail` stays what clients read before problems: one sentence, or for a 422 the list of refused
fields (`loc`, `msg`, `type`) FastAPI gives. `type` is "about:blank": the status says what kind
of problem it is, and `title` is the status's phrase."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse

PROBLEM_JSON = "application/problem+json"


def problem(status: int, detail: Any, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The one answer to a refused or failed request; ``headers`` such as Retry-After, Allow,
    WWW-Authenticate go with it."""
    body = {"type": "about:blank", "title": _title(status), "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"

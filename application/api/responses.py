"""The refusals every route may answer, for the OpenAPI document."""

from __future__ import annotations

from typing import Any

from runledger.application.reading.schemas.common import Problem

AUTHENTICATED: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "no valid bearer token"},
    403: {"model": Problem, "description": "the token's role may not do this"},
    429: {
        "model": Problem,
        "description": "too many failed tokens from this address; Retry-After says when to retry",
    },
    503: {"model": Problem, "description": "the store is unreachable or a projection is stuck"},
}
ABOUT_ONE: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such run or entry"},
}
ACTING: dict[int | str, dict[str, Any]] = {
    409: {"model": Problem, "description": "the state of things refuses it; nothing written"},
}

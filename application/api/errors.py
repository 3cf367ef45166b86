"""The application's refusals as HTTP answers: one sentence each, never a 500 for input."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from runledger.application.errors import (
    BadRequest,
    Conflict,
    NotFound,
    NotInitialised,
    ProjectionStuck,
    StoreError,
)
from runledger.domain.errors import DomainError
from runledger.domain.text import safe_text

log = logging.getLogger("runledger.api")


def _answer(status: int, error: BaseException) -> JSONResponse:
    return JSONResponse({"detail": safe_text(str(error), 2_000)}, status_code=status)


def _invalid(error: BadRequest) -> JSONResponse:
    """A refused input in the shape FastAPI gives its own validation errors, with the field the
    sentence names (``phases.0.steps.0.params.note: nan is not…``) as its location."""
    said = safe_text(str(error), 2_000)
    field, sep, _ = said.partition(": ")
    path = field.split(".") if sep and field and " " not in field else []
    where: list[str | int] = [int(p) if p.isdigit() else p for p in path]
    problem = {"loc": ["body", *where], "msg": said, "type": "value_error"}
    return JSONResponse({"detail": [problem]}, status_code=422)


def install(app: FastAPI) -> None:
    @app.exception_handler(NotFound)
    def not_found(_: Request, error: NotFound) -> JSONResponse:
        return _answer(404, error)

    @app.exception_handler(Conflict)
    def conflict(_: Request, error: Conflict) -> JSONResponse:
        return _answer(409, error)

    @app.exception_handler(DomainError)
    def refused(_: Request, error: DomainError) -> JSONResponse:
        return _answer(409, error)

    @app.exception_handler(BadRequest)
    def bad_request(request: Request, error: BadRequest) -> JSONResponse:
        if isinstance(error, Conflict):
            return _answer(409, error)
        return _invalid(error)

    @app.exception_handler(StoreError)
    @app.exception_handler(NotInitialised)
    @app.exception_handler(ProjectionStuck)
    def unavailable(_: Request, error: Exception) -> JSONResponse:
        log.warning("store trouble: %s", safe_text(str(error), 500))
        return _answer(503, error)

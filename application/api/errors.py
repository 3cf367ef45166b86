"""The application's refusals as HTTP answers: one sentence each, never a 500 for input, every
one a problem (problems.py), HTTPException's 401/403/404/405 too.

Refused input is answered 422 in the shape FastAPI gives its own validation errors, with the field
the sentence names as its location; a state that refuses the request is 409; unknown is 404."""

from __future__ import annotations

import logging
from typing import Any

from eventsourcing.persistence import IntegrityError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from runledger.application.api.problems import problem
from runledger.application.errors import (
    DRIVER_ERRORS,
    RETRY_AFTER_S,
    BadQuery,
    BadRequest,
    Conflict,
    NotFound,
    NotInitialised,
    ProjectionStuck,
    StoreError,
    store_error,
)
from runledger.application.services.dry_run import StartRefused
from runledger.domain.errors import DomainError
from runledger.domain.text import safe_text
from runledger.domain.values import UnsafeValue, plain_message

log = logging.getLogger("runledger.api")


def _answer(
    status: int, error: BaseException, headers: dict[str, str] | None = None
) -> JSONResponse:
    return problem(status, safe_text(str(error), 2_000), headers)


def _invalid(said: str, where: str = "body") -> JSONResponse:
    """``said`` names its field first (``phases.0.steps.0.params.note: nan is not…``)."""
    said = safe_text(said, 2_000)
    field, sep, _ = said.partition(": ")
    path = field.split(".") if sep and field and " " not in field else []
    loc: list[str | int] = [where, *(_index_or_key(p) for p in path)]
    return problem(422, [{"loc": loc, "msg": said, "type": "value_error"}])


def _index_or_key(part: str) -> str | int:
    """A list's index as a number, any other key as it is: ``"²"`` and ``"٣"`` are digits to
    str.isdigit, but no index, and int() refuses the one and reads the other as 3."""
    return int(part) if part.isascii() and part.isdigit() and len(part) < 19 else part


def _validation(error: RequestValidationError) -> JSONResponse:
    """FastAPI's own 422, without echoing the input: a value that cannot be encoded (a lone
    surrogate) must not turn a refusal into a 500."""
    detail: list[dict[str, Any]] = [
        {
            "loc": [p if isinstance(p, int) else safe_text(str(p), 200) for p in e.get("loc", ())],
            "msg": safe_text(plain_message(e), 2_000),
            "type": safe_text(str(e.get("type", "value_error")), 100),
        }
        for e in error.errors()
    ]
    return problem(422, detail)


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        return _validation(error)

    @app.exception_handler(HTTPException)
    def http(_: Request, error: HTTPException) -> JSONResponse:
        if error.status_code == 400:  # a body that is not even text: bad input like any other
            return _invalid(f"body: {error.detail}")
        return problem(error.status_code, safe_text(str(error.detail), 2_000), error.headers)

    @app.exception_handler(NotFound)
    def not_found(_: Request, error: NotFound) -> JSONResponse:
        return _answer(404, error)

    @app.exception_handler(UnsafeValue)
    def unsafe(_: Request, error: UnsafeValue) -> JSONResponse:
        return _invalid(str(error))

    @app.exception_handler(DomainError)
    def refused(_: Request, error: DomainError) -> JSONResponse:
        return _answer(409, error)

    @app.exception_handler(BadRequest)
    def bad_request(_: Request, error: BadRequest) -> JSONResponse:
        # A start that this server's modules or the world refuse (no module registers the
        # action, its params, a lease target held now) is well formed: the state of things
        # refuses it, as no document can say what the modules loaded take.
        if isinstance(error, Conflict | StartRefused):
            return _answer(409, error)
        return _invalid(str(error), "query" if isinstance(error, BadQuery) else "body")

    @app.exception_handler(IntegrityError)
    def raced(_: Request, error: IntegrityError) -> JSONResponse:
        # Another writer (a runner, another request, another server) saved the same aggregate
        # between this request's read and its save; the store refused the stale save whole.
        log.info("a save lost a race: %s", safe_text(str(error), 300))
        return problem(409, "another writer changed this at the same moment; try again")

    @app.exception_handler(StoreError)
    @app.exception_handler(NotInitialised)
    @app.exception_handler(ProjectionStuck)
    def unavailable(_: Request, error: Exception) -> JSONResponse:
        # Not logged here: an outage meets every request, and the store's pool says once when
        # it starts and once when it ends (store/outage.py).
        log.debug("store trouble: %s", safe_text(str(error), 500))
        return _answer(503, error, {"Retry-After": str(RETRY_AFTER_S)})

    for driver_error in DRIVER_ERRORS:
        app.add_exception_handler(driver_error, _driver_trouble)

    @app.exception_handler(Exception)
    def failed(_: Request, error: Exception) -> JSONResponse:
        # Starlette logs the traceback; the client is told only that it was not its fault.
        return problem(500, "the server failed to answer this request; its log says why")


def _driver_trouble(_: Request, error: Exception) -> JSONResponse:
    """A driver's error that no service put in words (a connection cut under a read): the
    store's trouble in one sentence, never a traceback."""
    said = store_error(error, "store")
    log.debug("store trouble: %s", safe_text(str(said), 500))
    return _answer(503, said, {"Retry-After": str(RETRY_AFTER_S)})

"""The console's page when the store cannot be reached: it says so, and tries again by itself.

The API's answer on its own paths is left as it is (503 with Retry-After); on the console's, a
store that is away is this page rather than the sentence of whichever error met it first."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response

from runledger.application.errors import (
    DRIVER_ERRORS,
    RETRY_AFTER_S,
    StoreError,
    StoreUnavailable,
    store_error,
)
from runledger.application.web.render import page

Handler = Callable[[Request, Any], Response | Awaitable[Response]]


def install(app: FastAPI, is_console: Callable[[Request], bool]) -> None:
    """After the console has made the API's handlers pages: a store away is this page."""
    handlers = app.exception_handlers
    for kind in DRIVER_ERRORS:
        handlers[kind] = _or_page(handlers[kind], is_console)
    handlers[StoreUnavailable] = _or_page(handlers[StoreError], is_console)


def _or_page(handler: Handler, is_console: Callable[[Request], bool]) -> Handler:
    async def handle(request: Request, error: Any) -> Response:
        if is_console(request) and isinstance(store_error(error, "store"), StoreUnavailable):
            return away(request)
        answer = handler(request, error)
        return await answer if inspect.isawaitable(answer) else answer

    return handle


def away(request: Request) -> Response:
    answer = page(
        request,
        "error.html",
        None,
        503,
        title="The store cannot be reached",
        message="The store cannot be reached just now. "
        f"This page tries again in {RETRY_AFTER_S} seconds.",
        status=503,
    )
    answer.headers["Retry-After"] = str(RETRY_AFTER_S)
    if request.method in ("GET", "HEAD"):  # a form is not sent again behind the person's back
        answer.headers["Refresh"] = str(RETRY_AFTER_S)
    return answer

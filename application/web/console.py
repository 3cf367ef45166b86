"""The console on the API's app: sessions, its assets, its pages, and errors as pages."""

from __future__ import annotations

import inspect
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware

from runledger.application.routed import add_routes
from runledger.application.runledger import Runledger
from runledger.application.web import unreachable
from runledger.application.web.forms import Utf8Forms
from runledger.application.web.render import HERE, page
from runledger.application.web.routes import (
    bulk,
    decisions,
    definitions,
    entries,
    favicon,
    fleet,
    new_definition,
    replay,
    run,
    runs,
    signin,
    webhooks,
)
from runledger.application.web.secure_cookie import SecureCookie
from runledger.application.web.session import COOKIE, Refused, SignInFirst, sign_in_url
from runledger.domain.text import safe_text

API_PATHS = ("/admin", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc")
ROUTERS = [
    signin.router,
    runs.router,
    run.router,
    entries.router,
    decisions.router,
    replay.router,
    fleet.router,
    webhooks.router,
    bulk.router,
    new_definition.router,
    definitions.router,
    favicon.router,
]
"""The console's pages; each module of routes/ adds its router here."""

Handler = Callable[[Request, Any], Response | Awaitable[Response]]


def install(app: FastAPI, rl: Runledger) -> None:
    """Serve the console at / beside the API (which keeps /admin and the probes)."""
    secret = rl.settings.session_secret or secrets.token_urlsafe(32)
    # Inside the sessions' middleware (added after it), so that its refusal is a page like any.
    app.add_middleware(
        Utf8Forms,
        refuse=lambda request, said: error_page(request, 422, said),
        applies=lambda path: not path.startswith(API_PATHS),
    )
    # No max_age: the cookie lasts the browser session, and the console ends a session itself
    # after session_hours by the store's clock (and says so) instead of dropping it unsigned.
    app.add_middleware(
        SessionMiddleware,
        secret_key=secret,
        session_cookie=COOKIE,
        max_age=None,
        same_site="strict",
        https_only=False,  # per request, by SecureCookie around it
    )
    app.add_middleware(
        SecureCookie,
        cookie=COOKIE,
        always=rl.settings.cookie_secure,
        trusted=rl.settings.trusted_proxies,
    )
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    for router in ROUTERS:
        add_routes(app, router)
    for kind, handler in list(app.exception_handlers.items()):
        app.exception_handlers[kind] = _pages_first(handler)
    unreachable.install(app, is_console)
    app.exception_handlers[SignInFirst] = _sign_in_first
    app.exception_handlers[Refused] = _refused


def is_console(request: Request) -> bool:
    return not request.url.path.startswith(API_PATHS)


def _pages_first(handler: Handler) -> Handler:
    """The API's answer to an error, shown as a page on the console's paths."""

    async def handle(request: Request, error: Any) -> Response:
        answer = handler(request, error)
        if inspect.isawaitable(answer):
            answer = await answer
        if not is_console(request):
            return answer
        return error_page(request, answer.status_code, _said(answer))

    return handle


def _said(answer: Response) -> str:
    try:
        detail = json.loads(bytes(answer.body)).get("detail")
    except (ValueError, AttributeError):
        return "Something went wrong."
    if isinstance(detail, list):
        return "; ".join(_located(d) for d in detail if isinstance(d, dict)) or "Refused."
    return str(detail)


def _located(detail: dict[str, Any]) -> str:
    """A validation error naming its field first, as the API's sentences do."""
    message = str(detail.get("msg", ""))
    loc = [str(p) for p in detail.get("loc", ()) if p not in ("body", "query", "path")]
    field = ".".join(loc)
    return message if not field or message.startswith(field) else f"{field}: {message}"


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    titles = {403: "Not allowed", 404: "Not found", 409: "Refused", 422: "Not accepted"}
    return page(
        request,
        "error.html",
        None,
        status,
        title=titles.get(status, "Not done" if status < 500 else "Unavailable"),
        message=safe_text(message, 2_000),
        status=status,
    )


def _sign_in_first(request: Request, error: SignInFirst) -> Response:
    target = sign_in_url(error.back_to, error.why)
    if request.headers.get("HX-Request") == "true":  # htmx: the whole page goes, not a fragment
        return Response(status_code=204, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


def _refused(request: Request, error: Refused) -> Response:
    return error_page(request, error.status, error.message)

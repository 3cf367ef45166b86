"""Signing in with an API token, and out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import TokensDep
from runledger.application.web.render import page
from runledger.application.web.session import SessionsDep, check_form_token, sign_in, sign_out

router = APIRouter(include_in_schema=False)
Text = Annotated[str, Form(max_length=2_000)]


def _safe_next(target: str) -> str:
    """Back to a page of this console only: never another site (//host or a scheme)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/runs"
    return target


@router.get("/signin", response_class=HTMLResponse)
def sign_in_page(request: Request, next: str = "/runs", why: str = "") -> HTMLResponse:
    return page(request, "signin.html", None, next=_safe_next(next), why=why[:200])


@router.post("/signin", response_model=None)
def sign_in_with_token(
    request: Request,
    issuer: TokensDep,
    sessions: SessionsDep,
    token: Text = "",
    csrf: Text = "",
    next: Text = "/runs",
) -> Response:
    check_form_token(request, csrf)
    actor = issuer.identify(token.strip())
    if actor is None:
        return page(
            request,
            "signin.html",
            None,
            401,
            next=_safe_next(next),
            why="",
            refused="token: that is not a live runledger token (runledger token create NAME "
            "--role R prints one).",
        )
    sign_in(request, actor, sessions)
    return RedirectResponse(_safe_next(next), status_code=303)


@router.post("/signout")
def sign_out_of_console(
    request: Request, sessions: SessionsDep, csrf: Text = ""
) -> RedirectResponse:
    check_form_token(request, csrf)
    sign_out(request, sessions)
    return RedirectResponse("/signin?why=You+have+signed+out.", status_code=303)

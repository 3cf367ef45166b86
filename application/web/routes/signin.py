"""Signing in with an API token, and out."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import BrakeDep, TokensDep
from runledger.application.forwarded import ClientAddress
from runledger.application.web.render import page
from runledger.application.web.session import SessionsDep, check_form_token, sign_in, sign_out

router = APIRouter(include_in_schema=False)
Text = Annotated[str, Form(max_length=2_000)]
WRONG = (
    "token: that is not a live runledger token (runledger token create NAME --role R prints one)."
)


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
    brake: BrakeDep,
    address: ClientAddress,
    token: Text = "",
    csrf: Text = "",
    next: Text = "/runs",
) -> Response:
    check_form_token(request, csrf)
    wait = brake.wait_s(address, "console")
    if wait:  # before the token is looked at: from a braked address, a right one waits too
        said = f"Too many failed sign-ins from your address: try again in {wait} seconds."
        answer = _refused(request, next, 429, said)
        answer.headers["Retry-After"] = str(wait)
        return answer
    actor = issuer.identify(token.strip())
    if actor is None:
        brake.failed(address)
        return _refused(request, next, 401, WRONG)
    sign_in(request, actor, sessions)
    return RedirectResponse(_safe_next(next), status_code=303)


def _refused(request: Request, next: str, status: int, said: str) -> HTMLResponse:
    return page(request, "signin.html", None, status, next=_safe_next(next), why="", refused=said)


@router.post("/signout")
def sign_out_of_console(
    request: Request, sessions: SessionsDep, csrf: Text = ""
) -> RedirectResponse:
    check_form_token(request, csrf)
    sign_out(request, sessions)
    return RedirectResponse("/signin?why=You+have+signed+out.", status_code=303)

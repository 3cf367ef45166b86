"""Who is signed in to the console, and the CSRF token every form carries.

The cookie is Starlette's signed one (HttpOnly, SameSite=Strict): it holds the id of a session
kept in the store (domain/session.py) and the form token. Every page reads that session (closed
by a sign-out, or past its hours, it speaks for no one) and asks the tokens view whether its
token is still live, so a copied cookie dies with its session and a revoked token signs its
sessions out on their next page."""

from __future__ import annotations

import hmac
import secrets
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote, urlsplit
from uuid import UUID

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from runledger.application.deps import Now, SettingsDep, TokensDep
from runledger.application.services.sessions import Sessions
from runledger.application.services.tokens import Actor, Tokens
from runledger.domain.session import Session
from runledger.domain.token import a_role, may

COOKIE = "runledger_session"


class SignInFirst(Exception):
    """No live session: the console answers with the sign-in page, naming why."""

    def __init__(self, back_to: str, why: str = "") -> None:
        super().__init__(why)
        self.back_to = back_to
        self.why = why


class Refused(Exception):
    """A console request that cannot be served, as a page saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def form_token(request: Request) -> str:
    """This session's CSRF token, made on first use (the sign-in form has one too)."""
    session: dict[str, Any] = request.session
    token = session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(24)
        session["csrf"] = token
    return token


def check_form_token(request: Request, sent: object) -> None:
    """The form's CSRF token against this session's. No session at all (no cookie, or one this
    console did not sign: it restarted with another secret) is not a forged form but a person
    to sign in again, so they are sent to the sign-in page, nothing done."""
    expected = request.session.get("csrf")
    if not isinstance(expected, str):
        request.session.clear()
        raise SignInFirst(_page_of(request), "Your session has ended; sign in again.")
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise Refused(
            403,
            "This form did not come from your console session (its CSRF token is missing or "
            "out of date), so nothing was done. Go back, reload the page and try again.",
        )


def sign_in(request: Request, actor: Actor, sessions: Sessions) -> None:
    """A new session for this token, replacing (and closing) the one this cookie held."""
    opened = sessions.open(actor.token_id, replacing=_session_id(request))
    request.session.clear()
    request.session.update(session=str(opened), csrf=secrets.token_urlsafe(24))


def sign_out(request: Request, sessions: Sessions) -> None:
    """The session closed in the store, so that a copy of the cookie opens nothing."""
    session_id = _session_id(request)
    if session_id is not None:
        sessions.close(session_id)
    request.session.clear()


def _session_id(request: Request) -> UUID | None:
    held = request.session.get("session")
    try:
        return UUID(held) if isinstance(held, str) else None
    except ValueError:
        return None


def _back_to(request: Request) -> str:
    path = request.url.path
    return path + (f"?{request.url.query}" if request.url.query else "")


def _page_of(request: Request) -> str:
    """Where a form was posted from, to go back to after signing in: this console's page
    (the Referer's path, when it is this host's), else the runs."""
    if request.method == "GET":
        return _back_to(request)
    came_from = urlsplit(request.headers.get("referer", ""))
    if came_from.netloc == request.url.netloc and came_from.path.startswith("/"):
        return came_from.path + (f"?{came_from.query}" if came_from.query else "")
    return "/runs"


def signed_in(
    request: Request, sessions: Sessions, tokens: Tokens, hours: float, now: datetime
) -> Actor:
    """The person this session speaks for, or SignInFirst saying why not: a session lasts
    ``hours`` from its sign-in, as of ``now`` on the store's clock, until it is closed."""
    session_id = _session_id(request)
    if session_id is None:
        raise SignInFirst(_back_to(request))
    session = sessions.get(session_id)
    why = _ended(session, hours, now)
    actor = None if session is None or why else tokens.holder(session.token_id)
    if actor is None:
        request.session.clear()
        raise SignInFirst(_back_to(request), why or "Your token has been revoked.")
    request.state.actor = actor.name
    return actor


def _ended(session: Session | None, hours: float, now: datetime) -> str:
    """Why this session speaks for no one any more; "" while it is open and within its hours."""
    if session is None:
        return "Your session has ended; sign in again."
    if session.closed_at is not None:
        return f"Your session was closed ({session.closed_why}); sign in again."
    if now.timestamp() > session.ends_at(hours):
        return f"Your session ended after {hours:g} hours."
    return ""


async def _sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.rl.sessions
    return sessions


SessionsDep = Annotated[Sessions, Depends(_sessions)]


def reader(
    request: Request, sessions: SessionsDep, tokens: TokensDep, settings: SettingsDep, now: Now
) -> Actor:
    return signed_in(request, sessions, tokens, settings.session_hours, now)


async def actor_of_form(
    request: Request, sessions: SessionsDep, tokens: TokensDep, settings: SettingsDep, now: Now
) -> Actor:
    """An operator acting through a form of this session: CSRF checked before anything else."""
    form = await request.form()
    check_form_token(request, form.get("csrf"))
    hours = settings.session_hours
    actor = await run_in_threadpool(signed_in, request, sessions, tokens, hours, now)
    if not may(actor.role, "operator"):
        said = "only operators and admins act in the console; nothing was done."
        raise Refused(403, f"{actor.name} signed in as {a_role(actor.role)}: {said}")
    return actor


Reader = Annotated[Actor, Depends(reader)]
Acting = Annotated[Actor, Depends(actor_of_form)]


def sign_in_url(back_to: str, why: str = "") -> str:
    query = f"?next={quote(back_to, safe='')}"
    return "/signin" + query + (f"&why={quote(why, safe='')}" if why else "")

"""What serves the runs: modules, runners, projections, tokens."""

from __future__ import annotations

from dataclasses import asdict
from typing import TypeVar
from uuid import UUID

from fastapi import APIRouter, Response

from runledger.application.api.deps import Admin, Viewer
from runledger.application.api.once import Once
from runledger.application.api.paging import Cursor, Limit, window
from runledger.application.api.responses import ABOUT_ONE, ACTING, AUTHENTICATED
from runledger.application.deps import FleetAnswersDep, ReconcilerDep, TokensDep
from runledger.application.errors import NotFound
from runledger.application.reading.schemas import fleet, tokens
from runledger.application.services.tokens import Tokens
from runledger.projections.tokens import TokenRow

T = TypeVar("T")

router = APIRouter(prefix="/admin", tags=["fleet"], responses=AUTHENTICATED | ABOUT_ONE | ACTING)


@router.get("/modules", response_model=fleet.ModulePage)
def list_modules(
    answers: FleetAnswersDep, _: Viewer, limit: Limit = 200, cursor: Cursor = None
) -> fleet.ModulePage:
    """The modules this process loaded: status, the reason when one failed, actions, leases."""
    return window(limit, cursor).page(answers.modules(), _same, fleet.ModulePage)


@router.post("/modules/{name}/reconcile", response_model=fleet.Reconciled)
def reconcile_module(
    reconciler: ReconcilerDep, actor: Admin, once: Once, name: str
) -> fleet.Reconciled | Response:
    """Ask a module loaded in this process which of its live entries are still in force, as it
    does itself after a reconnect. What it no longer holds is orphaned (expired, if past its
    until), each line naming the admin who asked; what it cannot answer for stays live."""
    return once(
        lambda: reconciler.asked_by_person(name, actor.name),
        lambda summary: fleet.Reconciled(module=name, **asdict(summary)),
    )


@router.get("/runners", response_model=fleet.RunnerPage)
def list_runners(
    answers: FleetAnswersDep, _: Viewer, limit: Limit = 200, cursor: Cursor = None
) -> fleet.RunnerPage:
    """Runners newest first, from their records: live, gone or stopped."""
    at = window(limit, cursor)
    return at.page(answers.runners(at.reach), _same, fleet.RunnerPage)


@router.get("/projections", response_model=fleet.ProjectionPage)
def list_projections(
    answers: FleetAnswersDep, _: Viewer, limit: Limit = 200, cursor: Cursor = None
) -> fleet.ProjectionPage:
    """Each view by name: its position, how far behind the store it is, where it is stuck."""
    at = window(limit, cursor)
    return at.page(answers.projections(), _same, fleet.ProjectionPage)


@router.get("/me", response_model=tokens.Me)
def me(actor: Viewer) -> tokens.Me:
    """Who the token speaks for."""
    return tokens.Me(name=actor.name, role=actor.role)


@router.get("/tokens", response_model=tokens.TokenPage)
def list_tokens(
    issuer: TokensDep, _: Admin, limit: Limit = 200, cursor: Cursor = None
) -> tokens.TokenPage:
    """Every token issued, live or revoked; never a secret."""
    at = window(limit, cursor)
    return at.page(issuer.listing(), tokens.Token.model_validate, tokens.TokenPage)


@router.post("/tokens", response_model=tokens.IssuedToken, status_code=201)
def issue_token(
    issuer: TokensDep, actor: Admin, once: Once, body: tokens.NewToken
) -> tokens.IssuedToken | Response:
    """A token for a person; its secret is in this answer only, `Location` the token's. Under
    an Idempotency-Key a repeat issues nothing and is refused (409) naming the token: its
    secret is not kept."""
    return once(
        lambda: issuer.issue(body.name, body.role, by=actor.name),
        tokens.IssuedToken.model_validate,
        tokens.IssuedToken.withheld,
        located=lambda issued: f"/admin/tokens/{issued.token_id}",
    )


@router.get("/tokens/{token_id}", response_model=tokens.Token)
def get_token(issuer: TokensDep, _: Admin, token_id: UUID) -> tokens.Token:
    """One live token; never its secret. A revoked token is gone (404, saying when); the list
    still shows it."""
    found = _token(issuer, token_id)
    if found.revoked_at is not None:
        raise NotFound(f"token {token_id} was revoked at {found.revoked_at:%Y-%m-%d %H:%M:%S} UTC")
    return tokens.Token.model_validate(found)


@router.delete("/tokens/{token_id}", response_model=tokens.Token)
def revoke_token(issuer: TokensDep, actor: Admin, token_id: UUID) -> tokens.Token:
    issuer.revoke(token_id, by=actor.name)
    return tokens.Token.model_validate(_token(issuer, token_id))


def _token(issuer: Tokens, token_id: UUID) -> TokenRow:
    found = [t for t in issuer.listing() if t.token_id == token_id]
    if not found:
        raise NotFound(f"no token {token_id}")
    return found[0]


def _same(one: T) -> T:
    return one

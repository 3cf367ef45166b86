"""What serves the runs: modules, runners, projections, tokens."""

from __future__ import annotations

from dataclasses import asdict
from uuid import UUID

from fastapi import APIRouter

from runledger.application.api import reading
from runledger.application.api.deps import Admin, Rl, Viewer, Writes
from runledger.application.api.schemas import fleet, tokens
from runledger.application.api.schemas.responses import ABOUT_ONE, ACTING, AUTHENTICATED

router = APIRouter(prefix="/admin", tags=["fleet"], responses=AUTHENTICATED | ABOUT_ONE | ACTING)


@router.get("/modules", response_model=list[fleet.Module])
def list_modules(rl: Rl, _: Viewer) -> list[fleet.Module]:
    """The modules this process loaded: status, the reason when one failed, actions, leases."""
    return reading.modules(rl)


@router.post("/modules/{name}/reconcile", response_model=fleet.Reconciled)
def reconcile_module(rl: Rl, writes: Writes, actor: Admin, name: str) -> fleet.Reconciled:
    """Ask a module loaded in this process which of its live entries are still in force, as it
    does itself after a reconnect. What it no longer holds is orphaned (expired, if past its
    until), each line naming the admin who asked; what it cannot answer for stays live."""
    with writes:
        summary = rl.reconciler.asked_by_person(name, actor.name)
    return fleet.Reconciled(module=name, **asdict(summary))


@router.get("/runners", response_model=list[fleet.Runner])
def list_runners(rl: Rl, _: Viewer) -> list[fleet.Runner]:
    """Runners newest first, from their records: live, gone or stopped."""
    return reading.runners(rl)


@router.get("/projections", response_model=list[fleet.Projection])
def list_projections(rl: Rl, _: Viewer) -> list[fleet.Projection]:
    return reading.projections(rl)


@router.get("/me", response_model=tokens.Me)
def me(actor: Viewer) -> tokens.Me:
    """Who the token speaks for."""
    return tokens.Me(name=actor.name, role=actor.role)


@router.get("/tokens", response_model=list[tokens.Token])
def list_tokens(rl: Rl, _: Admin) -> list[tokens.Token]:
    return [tokens.Token.model_validate(t) for t in rl.tokens.listing()]


@router.post("/tokens", response_model=tokens.IssuedToken, status_code=201)
def issue_token(rl: Rl, writes: Writes, actor: Admin, body: tokens.NewToken) -> tokens.IssuedToken:
    with writes:
        issued = rl.tokens.issue(body.name, body.role, by=actor.name)
    return tokens.IssuedToken.model_validate(issued)


@router.delete("/tokens/{token_id}", response_model=tokens.Token)
def revoke_token(rl: Rl, writes: Writes, actor: Admin, token_id: UUID) -> tokens.Token:
    with writes:
        rl.tokens.revoke(token_id, by=actor.name)
    found = [t for t in rl.tokens.listing() if t.token_id == token_id]
    return tokens.Token.model_validate(found[0])

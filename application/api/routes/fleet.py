"""What serves the runs: modules, runners, projections, tokens."""

from __future__ import annotations

from dataclasses import asdict
from uuid import UUID

from fastapi import APIRouter, Response

from runledger.application.api.deps import Admin, Viewer
from runledger.application.api.once import Once
from runledger.application.api.responses import ABOUT_ONE, ACTING, AUTHENTICATED
from runledger.application.deps import Rl
from runledger.application.reading import answers as reading
from runledger.application.reading.schemas import fleet, tokens

router = APIRouter(prefix="/admin", tags=["fleet"], responses=AUTHENTICATED | ABOUT_ONE | ACTING)


@router.get("/modules", response_model=list[fleet.Module])
def list_modules(rl: Rl, _: Viewer) -> list[fleet.Module]:
    """The modules this process loaded: status, the reason when one failed, actions, leases."""
    return reading.modules(rl)


@router.post("/modules/{name}/reconcile", response_model=fleet.Reconciled)
def reconcile_module(rl: Rl, actor: Admin, once: Once, name: str) -> fleet.Reconciled | Response:
    """Ask a module loaded in this process which of its live entries are still in force, as it
    does itself after a reconnect. What it no longer holds is orphaned (expired, if past its
    until), each line naming the admin who asked; what it cannot answer for stays live."""
    return once(
        lambda: rl.reconciler.asked_by_person(name, actor.name),
        lambda summary: fleet.Reconciled(module=name, **asdict(summary)),
    )


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
def issue_token(
    rl: Rl, actor: Admin, once: Once, body: tokens.NewToken
) -> tokens.IssuedToken | Response:
    """A token for a person; its secret is in this answer only. Under an Idempotency-Key a
    repeat issues nothing and is refused (409) naming the token: its secret is not kept."""
    return once(
        lambda: rl.tokens.issue(body.name, body.role, by=actor.name),
        tokens.IssuedToken.model_validate,
        tokens.IssuedToken.withheld,
    )


@router.delete("/tokens/{token_id}", response_model=tokens.Token)
def revoke_token(rl: Rl, actor: Admin, token_id: UUID) -> tokens.Token:
    rl.tokens.revoke(token_id, by=actor.name)
    found = [t for t in rl.tokens.listing() if t.token_id == token_id]
    return tokens.Token.model_validate(found[0])

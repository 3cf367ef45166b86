"""Who is asking the API, as typed dependencies: a bearer token's person and role (the
services' aliases are application/deps.py's, shared with the console)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from runledger.application.deps import TokensDep
from runledger.application.services.tokens import Actor, Tokens
from runledger.domain.token import Role, a_role, may

bearer = HTTPBearer(auto_error=False, description="a token from `runledger token create`")


def _actor(tokens: Tokens, credentials: HTTPAuthorizationCredentials | None) -> Actor:
    actor = tokens.identify(credentials.credentials) if credentials is not None else None
    if actor is None:
        raise HTTPException(
            status_code=401,
            detail="a valid bearer token is needed (runledger token create NAME --role R)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return actor


def role(needed: Role) -> object:
    def check(
        request: Request,
        tokens: TokensDep,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Actor:
        actor = _actor(tokens, credentials)
        request.state.actor = actor.name
        if not may(actor.role, needed):
            raise HTTPException(
                status_code=403,
                detail=f"{actor.name} is {a_role(actor.role)}; this needs {a_role(needed)}",
            )
        return actor

    return Depends(check)


Viewer = Annotated[Actor, role("viewer")]
Operator = Annotated[Actor, role("operator")]
Admin = Annotated[Actor, role("admin")]

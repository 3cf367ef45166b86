"""Who is asking the API, as typed dependencies: a bearer token's person and role (the
services' aliases are application/deps.py's, shared with the console)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from runledger.application.brake import Brake
from runledger.application.deps import BrakeDep, TokensDep
from runledger.application.forwarded import ClientAddress
from runledger.application.services.tokens import Actor
from runledger.domain.token import Role, a_role, may

bearer = HTTPBearer(auto_error=False, description="a token from `runledger token create`")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def holder(
    tokens: TokensDep, brake: BrakeDep, address: ClientAddress, credentials: Credentials
) -> Actor | None:
    """The holder of the bearer token sent, or None (none sent, or a wrong one)."""
    return checked(brake, address, credentials, tokens.identify)


def checked(
    brake: Brake,
    address: str,
    credentials: HTTPAuthorizationCredentials | None,
    identify: Callable[[str], Actor | None],
) -> Actor | None:
    """``identify``'s answer for the token sent, or None. A wrong token counts against the
    client's address; a braked address is refused before its token is even looked at, so a
    right token from it waits too."""
    if credentials is None:
        return None
    wait = brake.wait_s(address, "api")
    if wait:
        raise HTTPException(
            status_code=429,
            detail=f"too many wrong tokens from this address: try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )
    actor = identify(credentials.credentials)
    if actor is None:
        brake.failed(address)
    return actor


Holder = Annotated[Actor | None, Depends(holder)]
"""The token's person when a valid token came, else None: for what answers anyone, but says
more to a token (/readyz)."""


def role(needed: Role) -> object:
    async def check(request: Request, actor: Holder) -> Actor:
        if actor is None:
            raise HTTPException(
                status_code=401,
                detail="a valid bearer token is needed (runledger token create NAME --role R)",
                headers={"WWW-Authenticate": "Bearer"},
            )
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

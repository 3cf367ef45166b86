"""Issuing, revoking and recognising bearer tokens."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from runledger.application.errors import BadRequest, NotFound
from runledger.application.services.inputs import MAX_NAME, person
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.text import safe_text
from runledger.domain.token import ROLES, ApiToken, Role, as_role, digest
from runledger.domain.values import check_text
from runledger.projections.tokens import TokenRow, TokenRows

PREFIX = "rl_"


@dataclass(frozen=True)
class Actor:
    """Who a request speaks for, as their token says."""

    name: str
    role: Role
    token_id: UUID


@dataclass(frozen=True)
class Issued:
    token_id: UUID
    name: str
    role: Role
    secret: str


class Tokens:
    def __init__(self, *, app: LedgerApp, rows: TokenRows, clock: Callable[[], datetime]) -> None:
        self.app = app
        self.rows = rows
        self.clock = clock

    def issue(self, name: str, role: str, by: str) -> Issued:
        """A new token for ``name``; its secret is in the answer and nowhere else."""
        holder = check_text(name, "name", limit=MAX_NAME, empty=False)
        issuer = person(by, "issuing a token")
        granted = as_role(role)
        if granted is None:
            raise BadRequest(f"role: {safe_text(repr(role), 40)} is not one of {', '.join(ROLES)}")
        secret = PREFIX + secrets.token_urlsafe(32)
        token = ApiToken(
            name=holder, role=granted, digest=digest(secret), by=issuer, at=self.clock()
        )
        self.app.save(token)
        return Issued(token.id, holder, granted, secret)

    def revoke(self, token_id: UUID, by: str) -> None:
        revoker = person(by, "revoking a token")
        try:
            token: ApiToken = self.app.repository.get(token_id)
        except AggregateNotFoundError:
            raise NotFound(f"no token {token_id}") from None
        token.revoke(revoker, self.clock())
        self.app.save(token)

    def identify(self, secret: str) -> Actor | None:
        """The holder of a live token with this secret, or None."""
        if not secret.startswith(PREFIX) or len(secret) > 200:
            return None
        return _actor(self.rows.live(digest(secret)))

    def holder(self, token_id: UUID) -> Actor | None:
        """The holder of this token while it is live (a console session checks on each page)."""
        return _actor(self.rows.live_by_id(token_id))

    def listing(self) -> list[TokenRow]:
        return self.rows.listing()


def _actor(row: TokenRow | None) -> Actor | None:
    role = None if row is None else as_role(row.role)
    if row is None or role is None:
        return None
    return Actor(row.name, role, row.token_id)

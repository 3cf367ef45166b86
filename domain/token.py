"""Bearer tokens: each names one person and a role. Only a digest of the secret is stored."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal, get_args

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import DomainError

Role = Literal["viewer", "operator", "admin"]
ROLES: tuple[Role, ...] = get_args(Role)


class TokenRevoked(DomainError):
    """The token has already been revoked."""


def as_role(value: object) -> Role | None:
    """The role ``value`` names, or None."""
    for role in ROLES:
        if role == value:
            return role
    return None


def a_role(role: str) -> str:
    """The role with its article, as a sentence says it: "a viewer", "an operator"."""
    return f"{'an' if role[:1] in tuple('aeiou') else 'a'} {role}"


def may(role: str, needed: Role) -> bool:
    """Whether a token of ``role`` may do what ``needed`` may: each role can do what the ones
    before it in ROLES can."""
    rank: dict[str, int] = {r: i for i, r in enumerate(ROLES)}
    return rank.get(role, -1) >= rank[needed]


def digest(secret: str) -> str:
    """What is stored instead of the secret. A token is 256 random bits, so a plain hash is
    enough: there is no dictionary to try it against, and a slow hash would cost every request."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class ApiToken(Aggregate):
    """One bearer token: who it speaks for, with which role, who issued it, and its revocation."""

    class Issued(Aggregate.Created):
        name: str
        role: str
        digest: str
        by: str
        at: datetime

    class Revoked(Aggregate.Event):
        by: str
        at: datetime

    @event(Issued)
    def __init__(self, name: str, role: str, digest: str, by: str, at: datetime) -> None:
        self.name = name
        self.role = role
        self.digest = digest
        self.issued_by = by
        self.issued_at = at
        self.revoked_at: datetime | None = None

    def revoke(self, by: str, at: datetime) -> None:
        if self.revoked_at is not None:
            raise TokenRevoked(f"token {self.id} of {self.name} was revoked at {self.revoked_at}")
        self._revoked(by=by, at=at)

    @event(Revoked)
    def _revoked(self, by: str, at: datetime) -> None:
        self.revoked_at = at

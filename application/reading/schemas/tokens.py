from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from runledger.application.reading.schemas.common import Answer, Ask, Page, SaidText
from runledger.domain.token import Role


class Token(Answer):
    token_id: UUID
    name: str
    role: str
    issued_by: str
    issued_at: datetime
    revoked_at: datetime | None


class TokenPage(Page[Token]):
    pass


class NewToken(Ask):
    name: SaidText = Field(min_length=1, max_length=200, description="the person it speaks for")
    role: Role


class IssuedToken(Answer):
    token_id: UUID
    name: str
    role: Role
    secret: str = Field(description="shown once; only its digest is kept")

    def withheld(self) -> str:
        """Why a repeat of the request that issued this token is refused: its secret is gone."""
        return (
            f"the secret of token {self.token_id} ({self.name}, {self.role}) is shown once and "
            "never kept: revoke it and issue another if it was lost"
        )


class Me(Answer):
    name: str
    role: Role

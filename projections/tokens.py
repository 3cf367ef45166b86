"""Reads over the tokens view."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from runledger.projections.fresh_reads import FreshReads


@dataclass(frozen=True)
class TokenRow:
    token_id: UUID
    name: str
    role: str
    issued_by: str
    issued_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> TokenRow:
        revoked = row["revoked_at"]
        return cls(
            UUID(row["token_id"]),
            row["name"],
            row["role"],
            row["issued_by"],
            datetime.fromtimestamp(row["issued_at"], UTC),
            None if revoked is None else datetime.fromtimestamp(revoked, UTC),
        )


class TokenRows(FreshReads):
    """The tokens as the view holds them; ``fresh`` brings the view level with the store first."""

    def live(self, digest: str) -> TokenRow | None:
        rows = self._rows(
            "SELECT * FROM {rl_tokens} WHERE digest = %s AND revoked_at IS NULL", [digest]
        )
        return TokenRow.of(rows[0]) if rows else None

    def live_by_id(self, token_id: UUID) -> TokenRow | None:
        rows = self._rows(
            "SELECT * FROM {rl_tokens} WHERE token_id = %s AND revoked_at IS NULL",
            [str(token_id)],
        )
        return TokenRow.of(rows[0]) if rows else None

    def listing(self) -> list[TokenRow]:
        rows = self._rows("SELECT * FROM {rl_tokens} ORDER BY issued_at, token_id", [])
        return [TokenRow.of(row) for row in rows]

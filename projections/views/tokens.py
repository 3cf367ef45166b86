"""The tokens view: one row per bearer token (its digest, never its secret), from ApiToken."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.token import ApiToken
from runledger.projections.views.base import Row, RowView, epoch, require


@singledispatch
def apply_token(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the tokens view does not know {type(event).__name__}")


@apply_token.register
def _(event: ApiToken.Issued, row: Row | None) -> Row:
    return {
        "token_id": str(event.originator_id),
        "name": event.name,
        "role": event.role,
        "digest": event.digest,
        "issued_by": event.by,
        "issued_at": epoch(event.at),
        "revoked_at": None,
        "version": event.originator_version,
    }


@apply_token.register
def _(event: ApiToken.Revoked, row: Row | None) -> Row:
    return require(row, event) | {
        "revoked_at": epoch(event.at),
        "version": event.originator_version,
    }


class TokensView(RowView):
    name = "tokens"
    table = "rl_tokens"
    key = "token_id"
    columns = (
        "token_id",
        "name",
        "role",
        "digest",
        "issued_by",
        "issued_at",
        "revoked_at",
        "version",
    )
    events = (ApiToken.Issued, ApiToken.Revoked)
    apply = apply_token

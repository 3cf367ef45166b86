"""Options read as more than their type says: a count between bounds, a time."""

from __future__ import annotations

from datetime import UTC, datetime

from runledger.application.cli.display import safe_repr
from runledger.application.errors import BadRequest


def moment(option: str, text: str | None) -> datetime | None:
    """An option's ISO 8601 time (UTC unless it says otherwise), or BadRequest naming it."""
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{option} {safe_repr(text)} is not an ISO 8601 time") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def within(option: str, value: int, most: int) -> int:
    """A count option between 1 and ``most``, or BadRequest naming it."""
    if not 1 <= value <= most:
        raise BadRequest(f"{option} must be between 1 and {most:,}; {value} was asked for")
    return value

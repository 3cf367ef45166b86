"""Options read as more than their type says: a count between bounds, a time; and the --json
every command takes. A value refused here is a usage error (exit code 2)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated

import typer

from runledger.application.cli.display import safe_repr
from runledger.application.cli.errors import Usage, answering_json
from runledger.domain.values import text_problem

AsJson = Annotated[
    bool,
    typer.Option(
        "--json",
        help="print the HTTP API's answer for this as JSON, nothing else (a refusal too)",
        callback=answering_json,
    ),
]


def moment(option: str, text: str | None) -> datetime | None:
    """An option's ISO 8601 time (UTC unless it says otherwise), or Usage naming it."""
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise Usage(f"{option} {safe_repr(text)} is not an ISO 8601 time") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def within(option: str, value: int, most: int) -> int:
    """A count option between 1 and ``most``, or Usage naming it."""
    if not 1 <= value <= most:
        raise Usage(f"{option} must be between 1 and {most:,}; {value} was asked for")
    return value


MAX_INTERVAL_S = 3_600.0


def interval_s(option: str, seconds: float) -> float:
    """Seconds between ticks: finite, more than 0 (0 or less would tick without rest, hammering
    the store) and at most an hour; or Usage naming the option."""
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_INTERVAL_S):
        raise Usage(
            f"{option} must be more than 0 and at most {MAX_INTERVAL_S:g} seconds; "
            f"{seconds:g} was asked for"
        )
    return seconds


def typed(option: str, text: str | None) -> str | None:
    """Text a store can hold and compare (no NUL, no lone surrogates), or Usage naming it."""
    problem = None if text is None else text_problem(text)
    if problem is not None:
        raise Usage(f"{option}: {problem}")
    return text

"""Values as a person reads them, whatever kind they are: counts with their noun, moments in
UTC to the second, stored values as themselves (text never JSON-quoted). The words for states
and statuses are in words.py; these are the plain values around them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any


def counted(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one}" if n == 1 else f"{n:,} {many or one + 's'}"


def entries(n: int) -> str:
    return counted(n, "entry", "entries")


def when(value: datetime | None) -> str:
    """A moment as people read it here: UTC, to the second."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def value_said(value: Any) -> str:
    """A stored value as a person reads it: text as itself (never JSON-quoted), a time in UTC,
    yes or no, nothing as a dash; lists and mappings as compact JSON."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, str):
        moment = _moment(value)
        return when(moment) if moment else value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _moment(text: str) -> datetime | None:
    """An ISO time with its zone, as log details carry them (``next_attempt_at``)."""
    if not 19 <= len(text) <= 40 or text[4:5] != "-" or "T" not in text:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found if found.tzinfo is not None else None

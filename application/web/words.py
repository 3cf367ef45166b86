"""What the console calls each status and state, in words a person reads (never colour alone)."""

from __future__ import annotations

from datetime import UTC, datetime

from runledger.domain.text import safe_text

CLEANUP = {
    "not_required": ("nothing to give back", "quiet"),
    "pending": ("giving back", "busy"),
    "complete": ("all given back", "good"),
    "incomplete": ("needs a person", "bad"),
}
"""Cleanup status → (words, tone). The tone picks a colour; the words carry the meaning."""

RUN = {
    "running": ("running", "busy"),
    "completed": ("completed", "quiet"),
    "cancelled": ("cancelled", "quiet"),
    "aborted": ("aborted", "bad"),
}

STATE = {
    "placeholder": ("in flight", "busy"),
    "live": ("live", "busy"),
    "failing": ("failing", "bad"),
    "drifted": ("drifted", "bad"),
    "orphaned": ("orphaned", "bad"),
    "reverted": ("given back", "good"),
    "expired": ("expired", "good"),
    "kept": ("kept", "quiet"),
    "superseded": ("superseded", "quiet"),
}
"""Entry state → (words, tone), in the order the run page lists its groups."""

MARK = {"good": "✓", "bad": "⚠", "busy": "…", "quiet": "·"}
"""A sign beside the words, so a tone is never told by colour alone."""


def words(table: dict[str, tuple[str, str]], key: str) -> tuple[str, str]:
    return table.get(key, (safe_text(key, 80), "quiet"))


def when(value: datetime | None) -> str:
    """A moment as people on the console read it: UTC, to the second."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).isoformat()


def short(value: object) -> str:
    """The first block of an id: enough to tell runs apart on a screen."""
    return str(value).split("-", 1)[0]


def state_order(state: str) -> int:
    order = list(STATE)
    return order.index(state) if state in order else len(order)

"""The console's helpers around the vocabulary (application/words.py, where every status and
state has its words): moments, short ids, and the order a run's page lists its groups in."""

from __future__ import annotations

from datetime import UTC, datetime

from runledger.application.plain import when
from runledger.application.words import STATE

__all__ = ["iso", "short", "state_order", "when"]


def iso(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).isoformat()


def short(value: object) -> str:
    """The first block of an id: enough to tell runs apart on a screen."""
    return str(value).split("-", 1)[0]


def state_order(state: str) -> int:
    order = list(STATE)
    return order.index(state) if state in order else len(order)

"""Whose turn it is to attempt something: entries (giving back) and steps (dispatching) follow
one rule. A claim holds until it lapses, and a failed attempt's back-off must pass before the
next attempt is due."""

from __future__ import annotations

from datetime import datetime


def claim_live(expires_at: datetime | None, now: datetime) -> bool:
    """Whether a claim that lapses at ``expires_at`` still holds at ``now``."""
    return expires_at is not None and expires_at > now


def due(next_attempt_at: datetime | None, now: datetime) -> bool:
    """Whether the back-off after the last failure has passed by ``now``."""
    return next_attempt_at is None or next_attempt_at <= now

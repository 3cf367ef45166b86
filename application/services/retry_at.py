"""When a failed attempt may be tried again: the back-off rule (domain/backoff.py) with its
jitter drawn here, outside any event, so that replay reads the stored time."""

from __future__ import annotations

import random
from datetime import datetime

from runledger.domain.backoff import Backoff


def retry_at(backoff: Backoff, failed_attempt: int, allowed: int, now: datetime) -> datetime | None:
    return backoff.next_attempt(failed_attempt, allowed, now, random.random())

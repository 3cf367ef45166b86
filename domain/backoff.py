from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Backoff:
    """How long automatic attempts wait after a failure: the n-th failure waits ``delays[n-1]``
    seconds (the last delay again past the end), stretched or shrunk by up to ``jitter`` so that
    entries that failed together in one outage do not all come back in the same instant."""

    delays: tuple[float, ...] = (5.0, 30.0, 120.0)
    jitter: float = 0.2

    def next_attempt(
        self, failed_attempt: int, attempts_allowed: int, at: datetime, roll: float
    ) -> datetime | None:
        """When attempt ``failed_attempt + 1`` may start, or None when there is none.

        ``roll`` is a number in [0, 1) the caller drew: the rule itself draws nothing, so replay
        and tests see the same time.
        """
        if failed_attempt >= attempts_allowed or not self.delays:
            return None
        delay = self.delays[min(failed_attempt, len(self.delays)) - 1]
        stretch = 1 + self.jitter * (2 * roll - 1)
        return at + timedelta(seconds=max(0.0, delay * stretch))

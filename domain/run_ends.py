"""Every topic a run's end may be stored under: what a resting runner looks for
(services/sweep/pacing.py), and what the store's insert says on a channel of its own
(store/pg_insert.py)."""

from __future__ import annotations

from runledger.domain.run import Run
from runledger.domain.topics import topics_of

ENDS: tuple[str, ...] = tuple(
    sorted(topics_of(Run.Completed) | topics_of(Run.Cancelled) | topics_of(Run.Aborted))
)

from __future__ import annotations

from typing import Literal

CleanupStatus = Literal["not_required", "pending", "complete", "incomplete"]
CleanupFilter = Literal["not_required", "pending", "under_way", "complete", "incomplete"]
"""What runs may be listed by: each cleanup status, and ``under_way``, the runs that have ended
and are still ``pending`` (``pending`` itself also holds every running run)."""


def cleanup_status(*, running: bool, entries: int, unresolved: int, open_: int) -> CleanupStatus:
    """SPEC's table: a run's cleanup status as a function of its rows.

    ``open_`` counts unresolved entries that automatic cleanup may still work: retryable ones
    and ones under a live claim (an attempt in flight is not yet a verdict).
    """
    if entries == 0:
        return "not_required"
    if running or open_ > 0:
        return "pending"
    return "complete" if unresolved == 0 else "incomplete"

"""Runs whose pass raised, and how many more sweeps they wait behind the others."""

from __future__ import annotations

import threading
from uuid import UUID

TROUBLE_SWEEPS = 5


class TroubledRuns:
    """Runs whose pass raised, each passed over for the next few sweeps.

    The one piece of a sweep that outlives its call, by design: a run whose pass keeps raising
    must wait its turn behind the others across sweeps, or it would hold a slot of every sweep
    for ever. A lock keeps it whole when lanes (or two sweeps) note failures at once.
    """

    def __init__(self) -> None:
        self._waiting: dict[UUID, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._waiting)

    def pass_over(self, found: list[UUID]) -> list[UUID]:
        """``found`` without the runs still waiting; each waits one sweep less from now on."""
        with self._lock:
            kept = [r for r in found if r not in self._waiting]
            self._waiting = {r: n - 1 for r, n in self._waiting.items() if n > 1}
            return kept

    def note(self, run_id: UUID) -> None:
        """A run's pass raised: it waits the next TROUBLE_SWEEPS sweeps out."""
        with self._lock:
            self._waiting[run_id] = TROUBLE_SWEEPS

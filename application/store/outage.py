"""An outage of the store as a process says it: one line when it starts, one when it ends.

Every request of a server meets the same outage; each saying so would bury the two lines that
matter under one per request. The pool (store/bounds.py) tells this what its connections met.
"""

from __future__ import annotations

import threading
import time

from runledger.application.telemetry import say


class Outage:
    """Whether the store is away, as the last connection used found it."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.since: float | None = None
        """When the outage began (monotonic); None while the store answers."""
        self._lock = threading.Lock()

    @property
    def on(self) -> bool:
        return self.since is not None

    def lost(self, why: str) -> None:
        """A connection could not be had, broke, or did not answer in time."""
        with self._lock:
            if self.since is not None:
                return
            self.since = time.monotonic()
        say("store.unreachable", store=self.display, why=why)

    def answered(self) -> None:
        """A connection came back from its work whole."""
        if self.since is None:  # the common case, read without the lock
            return
        with self._lock:
            since, self.since = self.since, None
        if since is not None:
            say("store.reachable", store=self.display, after_s=round(time.monotonic() - since, 1))

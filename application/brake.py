"""A brake on guessing secrets: failed sign-ins and bearer tokens are counted per client address
over a sliding minute; past RUNLEDGER_FAILED_AUTH_PER_MINUTE the address is refused (429 with
Retry-After) until its oldest failure leaves the window, whatever secret it sends then.

Kept in this process's memory: each `serve` process brakes on its own, and a restart forgets."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from prometheus_client import Counter

WINDOW_S = 60.0
MAX_ADDRESSES = 10_000
"""Addresses remembered at once; past this the stalest go first, so a flood of addresses
cannot grow the process without bound."""


class Brake:
    def __init__(
        self,
        *,
        per_minute: int,
        refused: Counter,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_minute = per_minute
        self.refused = refused
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, address: str, door: str) -> int:
        """Seconds before ``address`` may present a secret again at ``door`` ("api" or
        "console"); 0 when it may now. A refusal is counted."""
        with self._lock:
            failures = self._recent(address)
            if len(failures) < self.per_minute:
                return 0
            wait = math.ceil(failures[0] + WINDOW_S - self.clock())
        self.refused.labels(door=door).inc()
        return max(wait, 1)

    def failed(self, address: str) -> None:
        """A wrong secret from ``address``."""
        with self._lock:
            failures = self._recent(address)
            failures.append(self.clock())
            self._failures.pop(address, None)
            self._failures[address] = failures  # last in the dict: the most recently seen
            if len(self._failures) > MAX_ADDRESSES:
                self._forget()

    def _recent(self, address: str) -> deque[float]:
        failures = self._failures.get(address) or deque(maxlen=self.per_minute)
        since = self.clock() - WINDOW_S
        while failures and failures[0] <= since:
            failures.popleft()
        return failures

    def _forget(self) -> None:
        """Drop the addresses whose failures have all left the window, then the stalest."""
        since = self.clock() - WINDOW_S
        for address in [a for a, f in self._failures.items() if not f or f[-1] <= since]:
            del self._failures[address]
        while len(self._failures) > MAX_ADDRESSES:
            del self._failures[next(iter(self._failures))]

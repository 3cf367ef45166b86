"""The store's one projector on PostgreSQL: a session-level advisory lock, on a connection of its
own, says which process it is.

Every process folding every event into the views itself before it read made each new runner
repeated work rather than capacity (scripts/MEASUREMENTS.md, "One projector per store"). The
lock ends with its session, so a killed projector's role is free at once; every other process
tries it every ``RETRY_S`` and one takes it over. Projecting twice is never wrong (a page locks
the tracking rows it advances: projectors take turns), only wasted: the lock says whose work it
is, not what is safe. So a frozen projector (SIGSTOP, a suspended VM), whose session and lock
live on, does not stop the reads of the others: past their wait they catch up themselves
(following.py).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

import psycopg

ROLE_LOCK = 0x726C70  # "rlp": the advisory lock class of the projector's role, keyed on the schema
RETRY_S = 1.0
"""How often a process that is not the projector tries to become it (and the projector checks
that its lock's connection still stands)."""


def wanted_channel(schema: str) -> str:
    """Where readers ask this schema's projector to catch up: one channel per store, as
    notifications are per database and the events table's channel is not named by schema."""
    return "rl_wanted_" + hashlib.sha256(schema.encode()).hexdigest()[:20]


def projected_channel(schema: str) -> str:
    """Where this schema's projector says it has caught up, for the readers waiting on it."""
    return "rl_projected_" + hashlib.sha256(schema.encode()).hexdigest()[:20]


class Role:
    """Whether this process holds the projector's role. ``take`` is cheap once held (no round
    trip); a process that does not hold it asks the server at most as often as it is called."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], schema: str) -> None:
        self.connect = connect
        self.schema = schema
        self._conn: psycopg.Connection[Any] | None = None
        self._held = False
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        return self._held

    def take(self) -> bool:
        """Hold the role if no one does; True when this process holds it."""
        if self._held:
            return True
        with self._lock:
            return self._try()

    def still_held(self) -> bool:
        """Whether the lock's connection still stands: a lost session lost the lock with it."""
        with self._lock:
            if not self._held or self._conn is None:
                return False
            try:
                self._conn.execute("SELECT 1")
            except psycopg.Error:
                self._drop()
            return self._held

    def want(self) -> None:
        """Ask the projector, whichever process it is, to catch up now."""
        self._notify(wanted_channel(self.schema))

    def _notify(self, channel: str) -> None:
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self.connect()
                self._conn.execute("SELECT pg_notify(%s, '')", [channel])
            except psycopg.Error:
                self._drop()

    def say_projected(self) -> None:
        """Tell the readers waiting on the projector (following.py) that it has caught up."""
        self._notify(projected_channel(self.schema))

    def release(self) -> None:
        with self._lock:
            self._drop()

    def _try(self) -> bool:
        if self._held:
            return True
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self.connect()
            row = self._conn.execute(
                "SELECT pg_try_advisory_lock(%s, hashtext(%s))", [ROLE_LOCK, self.schema]
            ).fetchone()
        except psycopg.Error:
            self._drop()
            return False
        self._held = bool(row and row[0])
        return self._held

    def _drop(self) -> None:
        self._held = False
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()  # the session ends: the server lets the lock go

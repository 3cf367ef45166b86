"""Hearing the store's inserts: one LISTEN per process, on the events table's channel (and on
the channel where readers ask the store's projector to catch up, projections/role.py).

Every insert NOTIFYs that channel (store/pg_insert.py, and the library's own insert), so the
projector and a resting runner wait for a notification instead of asking the store's head every
few milliseconds. A notification only says "something was inserted": whoever hears it reads
what it needs from the store, so one lost while the connection was down costs a read, never an
event (the listener tells everyone once when it starts listening again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg.sql import SQL, Identifier

RETRY_S = 1.0
"""Between tries to listen again after the connection was lost."""


class Ear(NamedTuple):
    """One channel's notifications as they are heard, and whether the listener listens now."""

    heard: threading.Event
    listening: threading.Event


class Listener:
    """A thread LISTENing on ``channels`` over a connection of its own; each ``ear`` of a
    channel is set on every notification there (and on all of them whenever listening resumes,
    for what came meanwhile was not heard)."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        channels: Sequence[str],
        payload: str = "",
    ) -> None:
        self.connect = connect
        self.channels = tuple(channels)
        self.payload = payload
        """A notification saying another payload is another store's (another schema's)."""
        self.listening = threading.Event()
        self._ears: dict[str, list[threading.Event]] = {c: [] for c in self.channels}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runledger-listen", daemon=True)
        self._starting = threading.Lock()

    def ear(self, channel: str) -> threading.Event:
        """An event set at every notification on ``channel`` from now on."""
        heard = threading.Event()
        self._ears[channel].append(heard)
        with self._starting:
            if not self._thread.is_alive() and not self._stop.is_set():
                self._thread.start()
        return heard

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _tell(self, channels: Sequence[str]) -> None:
        for channel in channels:
            for heard in list(self._ears.get(channel, ())):
                heard.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except psycopg.Error:
                self.listening.clear()
                self._tell(self.channels)
                self._stop.wait(RETRY_S)

    def _listen(self) -> None:
        with self.connect() as conn:
            for channel in self.channels:
                conn.execute(SQL("LISTEN {}").format(Identifier(channel)))
            # Told before 'listening': whoever waits for it may clear its ear and trust that
            # only an insert from now on sets it again.
            self._tell(self.channels)
            self.listening.set()
            while not self._stop.is_set():
                # A bounded wait, so that close() is noticed; notifications are not lost
                # between waits: the connection queues them.
                for note in conn.notifies(timeout=0.25, stop_after=1):
                    if note.payload in ("", self.payload):  # "": the library's own insert
                        self._tell([note.channel])

"""Hearing the store's inserts: one LISTEN per process, on the events table's channel.

Every insert NOTIFYs that channel (store/pg_insert.py, and the library's own insert), so the
projector and a resting runner wait for a notification instead of asking the store's head every
few milliseconds. A notification only says "something was inserted": whoever hears it reads
what it needs from the store, so one lost while the connection was down costs a read, never an
event (the listener tells everyone once when it starts listening again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.sql import SQL, Identifier

RETRY_S = 1.0
"""Between tries to listen again after the connection was lost."""


class Listener:
    """A thread LISTENing over a connection of its own; each ``ear`` is set on every insert."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], channel: str) -> None:
        self.connect = connect
        self.channel = channel
        self.listening = threading.Event()
        self._ears: list[threading.Event] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runledger-listen", daemon=True)

    def ear(self) -> threading.Event:
        """An event set at every insert heard from now on (and whenever listening resumes)."""
        heard = threading.Event()
        self._ears.append(heard)
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()
        return heard

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _tell(self) -> None:
        for heard in list(self._ears):
            heard.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except psycopg.Error:
                self.listening.clear()
                self._tell()  # what came meanwhile was not heard: everyone looks once
                self._stop.wait(RETRY_S)

    def _listen(self) -> None:
        with self.connect() as conn:
            conn.execute(SQL("LISTEN {}").format(Identifier(self.channel)))
            self.listening.set()
            self._tell()
            while not self._stop.is_set():
                # A bounded wait, so that close() is noticed; notifications are not lost
                # between waits: the connection queues them.
                for _ in conn.notifies(timeout=0.25, stop_after=1):
                    self._tell()

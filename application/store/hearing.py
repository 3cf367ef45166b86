"""What this process hears of its store on PostgreSQL: one LISTEN (notify.py), on the store's
runs' ends (on its every insert, where the store's saves do not say ends apart, pg_insert.py),
on readers' asks of its projector and on the projector's word that it caught up. The listening
starts at the first ear; on SQLite nothing notifies, and every ear is None."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg

from runledger.application.store import pg_insert
from runledger.application.store.notify import Ear, Listener
from runledger.projections.role import projected_channel, wanted_channel

Connect = Callable[[], psycopg.Connection[Any]]


class Hearing:
    """This process's ears on its store, one LISTEN for all of them."""

    def __init__(self, connect: Connect | None, schema: str, inserts: str) -> None:
        self.connect = connect
        """A connection of the store's own to listen on; None where nothing notifies."""
        self.schema = schema
        self.inserts = inserts
        """The events table's channel, which every insert notifies."""
        self.ends_said = False
        """Whether the store's saves say a run's end on a channel of its own (pg_insert.py)."""
        self._listener: Listener | None = None

    def listener(self) -> Listener | None:
        connect = self.connect
        if self._listener is None and connect is not None:
            ends = pg_insert.ended_channel(self.schema) if self.ends_said else self.inserts
            channels = [ends, wanted_channel(self.schema), projected_channel(self.schema)]
            self._listener = Listener(connect, channels, self.schema)
        return self._listener

    def heard(self) -> threading.Event | None:
        """Set whenever a run's end is stored from now on (at every insert, on a store whose
        saves do not say ends apart)."""
        listener = self.listener()
        return listener.ear(listener.channels[0]) if listener is not None else None

    def wanted(self) -> threading.Event | None:
        """Set whenever a reader asks the store's projector to catch up."""
        listener = self.listener()
        return listener.ear(listener.channels[1]) if listener is not None else None

    def projected(self) -> Ear | None:
        """Set whenever the store's projector says it has caught up, once something else in
        this process listens already (a runner's wake, the projector's own asks): a command that
        only reads polls rather than open a connection to listen. None until then."""
        listener = self._listener
        if listener is None:
            return None
        return Ear(listener.ear(listener.channels[2]), listener.listening)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()

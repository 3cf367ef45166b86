"""An outage of an SQLite file, said as PostgreSQL's pool says one (store/bounds.py): one line
when it starts, one when it ends.

SQLite has no pool that loses connections: a file that is locked past its busy timeout, cannot
be opened, or cannot be read or written fails the statement instead. So each of the datastore's
transactions tells the outage whether the file answered it.

A file locked by another process's writer is away for writes only: in WAL mode its readers go
on, so a read that answers does not end an outage that a write met, or every read would end it
and every write start it again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore

from runledger.application.errors import DRIVER_ERRORS, StoreUnavailable, store_error
from runledger.application.store.outage import Outage
from runledger.domain.text import safe_text


class FileOutage:
    """Whether the file is away, as its last transaction found it."""

    def __init__(self, display: str, path: str) -> None:
        self.outage = Outage(display)
        self.path = path
        self.writes_only = False
        """The outage was met by a write: only a write that commits ends it."""
        self._lock = threading.Lock()

    def failed(self, error: BaseException, writing: bool) -> None:
        said = store_error(error, self.outage.display, self.path)
        if not isinstance(said, StoreUnavailable):
            return  # the statement's own fault (a constraint, a bug), not the file's reach
        with self._lock:
            if not self.outage.on:
                self.writes_only = writing
        self.outage.lost(safe_text(str(said), 300))

    def answered(self, writing: bool) -> None:
        if self.outage.on and (writing or not self.writes_only):
            self.outage.answered()


def watch(datastore: SQLiteDatastore, display: str, path: str) -> FileOutage:
    """Make every transaction of ``datastore`` tell a FileOutage whether the file answered."""
    told = FileOutage(display, path)
    through = datastore.transaction

    @contextmanager
    def transaction(*, commit: bool) -> Iterator[SQLiteCursor]:
        try:
            with through(commit=commit) as cursor:
                yield cursor
        except DRIVER_ERRORS as error:
            told.failed(error, commit)
            raise
        told.answered(commit)

    datastore.transaction = transaction  # type: ignore[method-assign]
    return told

from __future__ import annotations

import errno
import os
import sqlite3

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError, PersistenceError

from runledger.domain.text import safe_text
from runledger.projections.errors import CannotCatchUp, ProjectionStuck, RunledgerError

__all__ = [
    "DRIVER_ERRORS",
    "RETRY_AFTER_S",
    "BadQuery",
    "BadRequest",
    "CannotCatchUp",
    "ConfigError",
    "Conflict",
    "NotFound",
    "NotInitialised",
    "ProjectionStuck",
    "RunledgerError",
    "StoreCorrupt",
    "StoreError",
    "StoreFull",
    "StoreReadOnly",
    "StoreUnavailable",
    "store_error",
]


class ConfigError(RunledgerError):
    """A setting is missing or malformed."""


class StoreError(RunledgerError):
    """The store answered with trouble; the message names the store and what happened."""


class StoreUnavailable(StoreError):
    """The configured store cannot be reached."""


class StoreCorrupt(StoreError):
    """The store's file or data is damaged."""


class StoreFull(StoreError):
    """The disk under the store has no room left."""


class StoreReadOnly(StoreError):
    """The store can be read but not written."""


class NotInitialised(RunledgerError):
    """The store has no runledger tables yet."""


class NotFound(RunledgerError):
    """No such run or entry."""


class BadRequest(RunledgerError):
    """The input was refused; nothing was written."""


class BadQuery(BadRequest):
    """A query parameter was refused (the HTTP API says where it was)."""


class Conflict(BadRequest):
    """The request is well formed but the state of things refuses it (a run that already ended,
    a cleanup while the run is running, a plan that no longer matches); nothing was written."""


STORE_ERRORS: tuple[type[BaseException], ...] = (
    PersistenceError,
    psycopg.Error,
    sqlite3.Error,
    OSError,
)
"""What a driver raises when the store itself is in trouble."""

DRIVER_ERRORS: tuple[type[Exception], ...] = (PersistenceError, psycopg.Error, sqlite3.Error)
"""What the store's drivers raise, for a front end to answer as the store's trouble (503) rather
than as its own failure (500): STORE_ERRORS less OSError, which is not only the store's."""

RETRY_AFTER_S = 5
"""What a 503 for the store's trouble tells a client to wait (Retry-After), in seconds: about
one wait for a connection, in which the pool tries again."""

OUTAGES: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlite3.OperationalError,
    StoreError,
    NotInitialised,
    CannotCatchUp,
    ProjectionStuck,
)
"""Trouble that is the store's and not one run's: a leg that meets it stops and the runner
says so once, instead of logging it again for every run it looks at."""

_SQLITE_CORRUPT, _SQLITE_NOTADB, _SQLITE_FULL, _SQLITE_READONLY = 11, 26, 13, 8
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CANTOPEN, _SQLITE_IOERR = 5, 6, 14, 10


def store_error(error: BaseException, display: str, path: str | None = None) -> RunledgerError:
    """A driver's error as one sentence naming the store and what happened. ``path``, an
    SQLite file's, lets an I/O error be told for what it often is: no room for -wal or -shm."""
    if isinstance(error, RunledgerError):
        return error
    cause = _driver_error(error)
    said = str(cause).strip()
    text = safe_text(said.splitlines()[0] if said else type(cause).__name__, 240)
    if isinstance(cause, sqlite3.Error):
        return _sqlite(cause, display, text, path)
    if isinstance(cause, psycopg.Error):
        return _postgres(cause, display, text)
    if isinstance(cause, OSError):
        return _os(cause, display, text)
    if isinstance(cause, OperationalError | InterfaceError):  # the library's, of a connection
        return StoreUnavailable(f"cannot reach the {display}: {text}")
    return StoreError(f"the {display} failed: {text}")


def _driver_error(error: BaseException) -> BaseException:
    """The driver's own error under the library's wrappers, which keep only its text."""
    found = error
    while isinstance(found, PersistenceError) and found.__cause__ is not None:
        found = found.__cause__
    return found


def _sqlite(error: sqlite3.Error, display: str, text: str, path: str | None) -> RunledgerError:
    code = int(getattr(error, "sqlite_errorcode", -1)) & 0xFF
    if code == _SQLITE_IOERR and path is not None and _no_room(path):
        return _full(display, text)
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in text:
        return StoreCorrupt(f"the {display} is not a database (corrupted or truncated): {text}")
    if code == _SQLITE_FULL:
        return _full(display, text)
    if code == _SQLITE_READONLY:
        return _read_only(display, text)
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreUnavailable(f"the {display} stayed locked by another process: {text}")
    if code == _SQLITE_CANTOPEN:
        return StoreUnavailable(f"cannot open the {display}: {text}")
    if code == _SQLITE_IOERR:
        return StoreUnavailable(f"the {display} could not be read or written: {text}")
    return StoreError(f"the {display} failed: {text}")


def _no_room(path: str) -> bool:
    try:
        return os.statvfs(os.path.dirname(os.path.abspath(path))).f_bavail == 0
    except OSError:
        return False


def _postgres(error: psycopg.Error, display: str, text: str) -> RunledgerError:
    state = error.sqlstate or ""
    if state == "53100":
        return _full(display, text)
    if state == "25006":
        return _read_only(display, text)
    if state == "55P03":
        return StoreUnavailable(f"the {display} stayed locked by another process: {text}")
    if state in ("XX001", "XX002"):
        return StoreCorrupt(f"the {display} reports damaged data: {text}")
    if state.startswith(("08", "53", "57P")) or (
        not state and isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
    ):
        return StoreUnavailable(f"cannot reach the {display}: {text}")
    return StoreError(f"the {display} refused a query: {text}")


def _os(error: OSError, display: str, text: str) -> RunledgerError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return _full(display, text)
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return _read_only(display, text)
    return StoreUnavailable(f"cannot use the {display}: {text}")


def _full(display: str, text: str) -> StoreFull:
    return StoreFull(
        f"the disk is full: the {display} cannot grow ({text}); "
        "free some space, then run the command again"
    )


def _read_only(display: str, text: str) -> StoreReadOnly:
    return StoreReadOnly(f"the store is read-only: the {display} cannot be written ({text})")

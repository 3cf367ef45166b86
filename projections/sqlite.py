from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteDatastore

from runledger.projections.backend import Backend, Cursor, Note, chunks, driver_error

SQLITE_READONLY = 8


class SQLiteBackend(Backend):
    event_errors = (
        sqlite3.IntegrityError,
        sqlite3.DataError,
        sqlite3.InterfaceError,
        sqlite3.ProgrammingError,
        OverflowError,
    )
    store_errors = (sqlite3.Error,)

    def __init__(self, datastore: SQLiteDatastore, events_table: str) -> None:
        self.datastore = datastore
        self.events_table = events_table

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[Cursor]:
        with self.datastore.transaction(commit=commit) as cursor:
            yield cursor

    @contextmanager
    def exclusive(self) -> Iterator[Cursor]:
        """A transaction holding the file's write lock from its BEGIN, on a connection of its
        own: a deferred one could read the schema, then fail to upgrade while another writes."""
        pool: Any = self.datastore.pool
        conn = sqlite3.connect(
            pool.db_name, uri=True, isolation_level=None, timeout=pool.lock_timeout or 5
        )
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield cast(Cursor, conn.cursor())
            except BaseException:
                conn.rollback()
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    def read_only(self, error: BaseException) -> bool:
        found = driver_error(error)
        code = int(getattr(found, "sqlite_errorcode", -1)) & 0xFF
        return code == SQLITE_READONLY or "readonly database" in str(found)

    def placeholder(self) -> str:
        return "?"

    def qualify(self, table: str) -> str:
        return f"{table}{self.suffix}"

    def select_streams(self, ids: Sequence[UUID]) -> list[StoredEvent]:
        found: list[StoredEvent] = []
        with self.transaction(commit=False) as cursor:
            for part in chunks(list(ids)):
                cursor.execute(
                    f"SELECT originator_id, originator_version, topic, state "
                    f"FROM {self.events_table} WHERE originator_id IN ({self.markers(len(part))}) "
                    "ORDER BY originator_id, originator_version",
                    [i.hex for i in part],
                )
                found.extend(
                    StoredEvent(
                        originator_id=UUID(row["originator_id"]),
                        originator_version=row["originator_version"],
                        topic=row["topic"],
                        state=row["state"],
                    )
                    for row in cursor.fetchall()
                )
        return found

    def select_page(self, after: int, limit: int) -> list[Note]:
        with self.transaction(commit=False) as cursor:
            plain: Any = cursor
            raw = plain.sqlite_cursor  # the library's rows are sqlite3.Row: tuples read quicker
            raw.row_factory = None
            raw.execute(
                f"SELECT rowid, originator_id, originator_version, topic, state "
                f"FROM {self.events_table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                [after, limit],
            )
            # _dashed, inline: a rebuild reads every event of the store through here.
            return [
                (p, f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}", v, t, s)
                for p, h, v, t, s in raw.fetchall()
            ]

    def peek(self, names: Sequence[str], limit: int) -> tuple[int, list[Note]]:
        with self.transaction(commit=False) as cursor:
            cursor.execute(
                self.sql(
                    "SELECT MIN(position) FROM {rl_tracking} "
                    f"WHERE name IN ({self.markers(len(names))})"
                ),
                list(names),
            )
            start = int(cursor.fetchone()[0] or 0)
        return start, self.select_page(start, limit)

    def select_positioned(self, ids: Sequence[UUID]) -> list[tuple[int, StoredEvent]]:
        found: list[tuple[int, StoredEvent]] = []
        with self.transaction(commit=False) as cursor:
            for part in chunks(list(ids)):
                cursor.execute(
                    f"SELECT rowid, originator_id, originator_version, topic, state "
                    f"FROM {self.events_table} WHERE originator_id IN ({self.markers(len(part))})",
                    [i.hex for i in part],
                )
                found.extend(
                    (
                        row["rowid"],
                        StoredEvent(
                            originator_id=UUID(row["originator_id"]),
                            originator_version=row["originator_version"],
                            topic=row["topic"],
                            state=row["state"],
                        ),
                    )
                    for row in cursor.fetchall()
                )
        return sorted(found, key=lambda pair: pair[0])

    def last_version(self, originator_id: UUID) -> int | None:
        with self.transaction(commit=False) as cursor:
            cursor.execute(
                f"SELECT MAX(originator_version) AS v FROM {self.events_table} "
                "WHERE originator_id = ?",
                [originator_id.hex],
            )
            row = cursor.fetchone()
        return None if row is None or row["v"] is None else int(row["v"])

    def absent(self, names: Sequence[str]) -> set[str]:
        with self.transaction(commit=False) as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")
            return set(names) - {row["name"] for row in cursor.fetchall()}


def _dashed(hex_id: str) -> str:
    """The text form of a UUID stored as 32 hex digits, without building a UUID."""
    h = hex_id
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

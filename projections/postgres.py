from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresDatastore
from psycopg.sql import SQL

from runledger.projections.backend import Backend, Cursor, Note, driver_error
from runledger.projections.postgres_events import PostgresEvents

# Below this many rows a plain batched INSERT is as quick as the COPY round trips.
COPY_FROM = 200
# ... and a batched upsert as quick as COPY into scratch then one INSERT ... ON CONFLICT (into
# rl_resources, five indexes; scripts/MEASUREMENTS.md, "Upserts by COPY from 100 rows").
UPSERT_COPY_FROM = 100


class PostgresBackend(Backend):
    """The projection tables on PostgreSQL; the events table is read by ``events``."""

    event_errors = (psycopg.DataError, psycopg.IntegrityError, OverflowError)
    store_errors = (psycopg.Error,)
    writes_aside = True
    row_locks = True
    lateral = True

    def __init__(self, datastore: PostgresDatastore, events_table: str) -> None:
        self.datastore = datastore
        self.schema = datastore.schema or "public"
        self.events_table = events_table
        self.events = PostgresEvents(datastore, self.schema, events_table)

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[Cursor]:
        with self.datastore.transaction(commit=commit) as cursor:
            yield cursor

    def select(self, statement: str, params: Sequence[Any], *, by_index: bool = False) -> list[Any]:
        """With ``by_index``, no bitmap scan. A bitmap scan never marks the index entries of
        dead rows, so with autovacuum off or behind, each read of a partial index meets every
        row updated out of it since the last VACUUM, so its time follows all that was given
        back (scripts/MEASUREMENTS.md, "Candidate query: no bitmap scans"); a plain index scan
        marks them as it meets them, and the next reads skip them. The setting goes in the same
        round trip as the read, and ends with its transaction."""
        if not by_index:
            return self._autocommitted(statement, params)
        with self.transaction(commit=False) as cursor:
            connection: Any = cursor.connection  # type: ignore[attr-defined]
            with connection.pipeline():
                cursor.execute("SET LOCAL enable_bitmapscan = off")
                cursor.execute(statement, params)
            return list(cursor.fetchall())

    def _autocommitted(self, statement: str, params: Sequence[Any]) -> list[Any]:
        """One read in one round trip: the pool's connections autocommit, so a lone SELECT is
        its own transaction, and BEGIN and ROLLBACK around it were two more round trips for
        every read of the views (scripts/MEASUREMENTS.md, "Reads at 100,000 runs")."""
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(statement, params)
            return list(cursor.fetchall())

    def read_only(self, error: BaseException) -> bool:
        found = driver_error(error)
        return isinstance(found, psycopg.Error) and found.sqlstate == "25006"

    def placeholder(self) -> str:
        return "%s"

    def among(self, values: Sequence[str]) -> tuple[str, list[Any]]:
        # One parameter, so that the statement's text is the same for any number of values: the
        # driver keeps its parsing and prepares it, where a marker each made a new text per count.
        # One string split by the server, not a list: the driver writes a list's array literal
        # element by element in Python (scripts/MEASUREMENTS.md, "Ids as one string").
        joined = ",".join(values)
        if joined.count(",") != max(len(values) - 1, 0):
            raise ValueError("among: values are ids, which hold no comma")
        return "= ANY(string_to_array(%s, ','))", [joined]

    def qualify(self, table: str) -> str:
        return f'"{self.schema}".{table}{self.suffix}'

    def select_streams(self, ids: Sequence[UUID]) -> list[StoredEvent]:
        return self.events.select_streams(ids)

    def select_page(self, after: int, limit: int) -> list[Note]:
        return self.events.select_page(after, limit)

    def peek(self, names: Sequence[str], limit: int) -> tuple[int, list[Note]]:
        return self.events.peek(SQL(self.qualify("rl_tracking")), names, limit)

    def select_positioned(self, ids: Sequence[UUID]) -> list[tuple[int, StoredEvent]]:
        return self.events.select_positioned(ids)

    def last_version(self, originator_id: UUID) -> int | None:
        return self.events.last_version(originator_id)

    def insert(
        self, cursor: Cursor, table: str, columns: Sequence[str], rows: list[list[Any]]
    ) -> None:
        if len(rows) < COPY_FROM:
            super().insert(cursor, table, columns, rows)
            return
        statement = f"COPY {self.qualify(table)} ({', '.join(columns)}) FROM STDIN"
        with cursor.copy(statement) as copy:  # type: ignore[attr-defined]
            for row in rows:
                copy.write_row(row)

    def upsert(
        self,
        cursor: Cursor,
        table: str,
        columns: Sequence[str],
        key: str,
        rows: list[list[Any]],
    ) -> None:
        """COPY into a temporary table, then one INSERT ... ON CONFLICT: a page of rows in three
        statements rather than a statement a row."""
        if len(rows) < UPSERT_COPY_FROM:
            super().upsert(cursor, table, columns, key, rows)
            return
        names = ", ".join(columns)
        scratch = f"rl_scratch_{table}"
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {scratch} "
            f"(LIKE {self.qualify(table)}) ON COMMIT DELETE ROWS"
        )
        with cursor.copy(f"COPY {scratch} ({names}) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for row in rows:
                copy.write_row(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        cursor.execute(
            f"INSERT INTO {self.qualify(table)} ({names}) SELECT {names} FROM {scratch} "
            f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
        )
        # DELETE, not TRUNCATE: a TRUNCATE gives the table a new file each time, which makes a
        # page slower (scripts/MEASUREMENTS.md, "Scratch table emptied by DELETE"); the commit
        # empties it anyway.
        cursor.execute(f"DELETE FROM {scratch}")

    def absent(self, names: Sequence[str]) -> set[str]:
        # By name, through the catalog's index, never a scan of pg_class, which a catalog
        # bloated by many schemas made and dropped (a test suite's, a CI machine's) makes slow
        # (scripts/MEASUREMENTS.md, "One connection at start, the catalog read by name").
        with self.transaction(commit=False) as cursor:
            cursor.execute(
                "SELECT t FROM unnest(%s::text[]) AS t "
                "WHERE to_regclass(format('%%I.%%I', %s::text, t)) IS NULL",
                [list(names), self.schema],
            )
            return {row["t"] for row in cursor.fetchall()}

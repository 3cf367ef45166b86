from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresDatastore
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier

from runledger.projections.backend import TABLES, Backend, Cursor, Note, driver_error

# Each wanted stream read through the primary key, one lookup per id: a plain
# "originator_id = ANY(...)" lets the planner choose a scan whose cost grows with the store;
# OFFSET 0 keeps the lookup a subquery, whatever the statistics say.
BY_ID = (
    "FROM unnest(%s::uuid[]) AS wanted(id), "
    "LATERAL (SELECT * FROM {}.{} x WHERE x.originator_id = wanted.id OFFSET 0) e"
)

# Below this many rows a plain batched INSERT is as quick as the COPY round trips.
COPY_FROM = 200
# ... and a batched upsert as quick as COPY into scratch then one INSERT ... ON CONFLICT (into
# rl_resources, five indexes; scripts/MEASUREMENTS.md, "Upserts by COPY from 100 rows").
UPSERT_COPY_FROM = 100


class PostgresBackend(Backend):
    event_errors = (psycopg.DataError, psycopg.IntegrityError, OverflowError)
    store_errors = (psycopg.Error,)
    writes_aside = True
    row_locks = True
    lateral = True

    def __init__(self, datastore: PostgresDatastore, events_table: str) -> None:
        self.datastore = datastore
        self.schema = datastore.schema or "public"
        self.events_table = events_table

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
            return super().select(statement, params)
        with self.transaction(commit=False) as cursor:
            connection: Any = cursor.connection  # type: ignore[attr-defined]
            with connection.pipeline():
                cursor.execute("SET LOCAL enable_bitmapscan = off")
                cursor.execute(statement, params)
            return list(cursor.fetchall())

    def read_only(self, error: BaseException) -> bool:
        found = driver_error(error)
        return isinstance(found, psycopg.Error) and found.sqlstate == "25006"

    def placeholder(self) -> str:
        return "%s"

    def qualify(self, table: str) -> str:
        return f'"{self.schema}".{table}{self.suffix}'

    def select_streams(self, ids: Sequence[UUID]) -> list[StoredEvent]:
        statement = SQL(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state "
            + BY_ID
            + " ORDER BY e.originator_id, e.originator_version"
        ).format(Identifier(self.schema), Identifier(self.events_table))
        with self.transaction(commit=False) as cursor:
            cursor.execute(statement, [list(ids)])
            return [
                StoredEvent(
                    originator_id=row["originator_id"],
                    originator_version=row["originator_version"],
                    topic=row["topic"],
                    state=bytes(row["state"]),
                )
                for row in cursor.fetchall()
            ]

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

    def select_page(self, after: int, limit: int) -> list[Note]:
        statement = SQL(
            "SELECT notification_id, originator_id::text, originator_version, topic, state "
            "FROM {}.{} WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(Identifier(self.schema), Identifier(self.events_table))
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            # Binary: a state travels as its bytes, not as hex text, and a page reads faster
            # (scripts/MEASUREMENTS.md, "Binary page reads on PostgreSQL").
            cur.execute(statement, [after, limit], prepare=True, binary=True)
            rows: list[Note] = cur.fetchall()
            conn.rollback()
        return rows  # psycopg reads bytea as bytes: each row is a Note as it comes

    def peek(self, names: Sequence[str], limit: int) -> tuple[int, list[Note]]:
        statement = SQL(
            "SELECT s.start, e.notification_id, e.originator_id::text, e.originator_version, "
            "e.topic, e.state FROM (SELECT MIN(position) AS start FROM {} WHERE name = ANY(%s)) s "
            "LEFT JOIN LATERAL (SELECT * FROM {}.{} x WHERE x.notification_id > s.start "
            "ORDER BY x.notification_id LIMIT %s) e ON true ORDER BY e.notification_id"
        ).format(
            SQL(self.qualify("rl_tracking")), Identifier(self.schema), Identifier(self.events_table)
        )
        # One round trip: the pool's connections autocommit, so a lone SELECT needs no BEGIN.
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(statement, [list(names), limit], prepare=True, binary=True)
            rows = cur.fetchall()
            conn.rollback()
        start = int(rows[0][0] or 0) if rows else 0
        return start, [(r[1], r[2], r[3], r[4], bytes(r[5])) for r in rows if r[1] is not None]

    def select_positioned(self, ids: Sequence[UUID]) -> list[tuple[int, StoredEvent]]:
        statement = SQL(
            "SELECT e.notification_id, e.originator_id, e.originator_version, e.topic, e.state "
            + BY_ID
        ).format(Identifier(self.schema), Identifier(self.events_table))
        # Sorted here, not by the server: ORDER BY notification_id tempts the planner to walk
        # the whole notification index, and the cost would grow with the store, not the run.
        with self.transaction(commit=False) as cursor:
            cursor.execute(statement, [list(ids)])
            found = [
                (
                    row["notification_id"],
                    StoredEvent(
                        originator_id=row["originator_id"],
                        originator_version=row["originator_version"],
                        topic=row["topic"],
                        state=bytes(row["state"]),
                    ),
                )
                for row in cursor.fetchall()
            ]
        return sorted(found, key=lambda pair: pair[0])

    def last_version(self, originator_id: UUID) -> int | None:
        statement = SQL(
            "SELECT MAX(originator_version) AS v FROM {}.{} WHERE originator_id = %s"
        ).format(Identifier(self.schema), Identifier(self.events_table))
        with self.transaction(commit=False) as cursor:
            cursor.execute(statement, [originator_id])
            row = cursor.fetchone()
        return None if row is None or row["v"] is None else int(row["v"])

    def missing_tables(self) -> list[str]:
        with self.transaction(commit=False) as cursor:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                [self.schema],
            )
            present = {row["table_name"] for row in cursor.fetchall()}
        return [t for t in (self.events_table, *TABLES) if t not in present]

    def index_names(self) -> set[str]:
        with self.transaction(commit=False) as cursor:
            cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", [self.schema])
            return {row["indexname"] for row in cursor.fetchall()}

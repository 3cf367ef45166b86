"""The library's table of stored events, as the projections read it on PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresDatastore
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Composable, Composed, Identifier

from runledger.projections.backend import Note

# Each wanted stream read through the primary key, one lookup per id: a plain
# "originator_id = ANY(...)" lets the planner choose a scan whose cost grows with the store;
# OFFSET 0 keeps the lookup a subquery, whatever the statistics say.
BY_ID = (
    "FROM unnest(%s::uuid[]) AS wanted(id), "
    "LATERAL (SELECT * FROM {} x WHERE x.originator_id = wanted.id OFFSET 0) e"
)


class PostgresEvents:
    """Streams, pages and versions read from the events table, each read on its own."""

    def __init__(self, datastore: PostgresDatastore, schema: str, events_table: str) -> None:
        self.datastore = datastore
        self.table = SQL("{}.{}").format(Identifier(schema), Identifier(events_table))

    def select_streams(self, ids: Sequence[UUID]) -> list[StoredEvent]:
        statement = SQL(
            "SELECT e.originator_id, e.originator_version, e.topic, e.state "
            + BY_ID
            + " ORDER BY e.originator_id, e.originator_version"
        ).format(self.table)
        return [_stored(row) for row in self._read(statement, [list(ids)])]

    def select_page(self, after: int, limit: int) -> list[Note]:
        statement = SQL(
            "SELECT notification_id, originator_id::text, originator_version, topic, state "
            "FROM {} WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(self.table)
        return self._pooled(statement, [after, limit])  # bytea comes as bytes: rows are Notes

    def peek(
        self, tracking: Composable, names: Sequence[str], limit: int
    ) -> tuple[int, list[Note]]:
        """The lowest position in ``tracking`` of the named views and the page after it."""
        statement = SQL(
            "SELECT s.start, e.notification_id, e.originator_id::text, e.originator_version, "
            "e.topic, e.state FROM (SELECT MIN(position) AS start FROM {} "
            "WHERE name = ANY(string_to_array(%s, ','))) s "
            "LEFT JOIN LATERAL (SELECT * FROM {} x WHERE x.notification_id > s.start "
            "ORDER BY x.notification_id LIMIT %s) e ON true ORDER BY e.notification_id"
        ).format(tracking, self.table)
        rows = self._pooled(statement, [",".join(names), limit])  # views' names: no comma
        start = int(rows[0][0] or 0) if rows else 0
        return start, [(r[1], r[2], r[3], r[4], bytes(r[5])) for r in rows if r[1] is not None]

    def select_positioned(self, ids: Sequence[UUID]) -> list[tuple[int, StoredEvent]]:
        statement = SQL(
            "SELECT e.notification_id, e.originator_id, e.originator_version, e.topic, e.state "
            + BY_ID
        ).format(self.table)
        # Sorted here, not by the server: ORDER BY notification_id tempts the planner to walk
        # the whole notification index, and the cost would grow with the store, not the run.
        found = [
            (row["notification_id"], _stored(row)) for row in self._read(statement, [list(ids)])
        ]
        return sorted(found, key=lambda pair: pair[0])

    def last_version(self, originator_id: UUID) -> int | None:
        statement = SQL("SELECT MAX(originator_version) AS v FROM {} WHERE originator_id = %s")
        rows = self._read(statement.format(self.table), [originator_id])
        return None if not rows or rows[0]["v"] is None else int(rows[0]["v"])

    def _read(self, statement: Composed, params: list[Any]) -> list[Any]:
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(statement, params)
            return list(cursor.fetchall())

    def _pooled(self, statement: Composed, params: list[Any]) -> list[Any]:
        """One round trip: the pool's connections autocommit, so a lone SELECT needs no BEGIN.
        Binary: a state travels as its bytes, not as hex text, and a page reads faster
        (scripts/MEASUREMENTS.md, "Binary page reads on PostgreSQL")."""
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(statement, params, prepare=True, binary=True)
            rows = cur.fetchall()
            conn.rollback()
        return rows


def _stored(row: Any) -> StoredEvent:
    return StoredEvent(
        originator_id=row["originator_id"],
        originator_version=row["originator_version"],
        topic=row["topic"],
        state=bytes(row["state"]),
    )

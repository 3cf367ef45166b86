"""Damaging a real store the way only raw SQL can: events no encoder would ever write."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from runledger.application.runledger import Runledger
from runledger.projections.backend import Backend
from runledger.projections.sqlite import SQLiteBackend

RUN_STARTED = "runledger.domain.run:Run.Started"
UNKNOWN_TOPIC = "runledger.domain.run:Run.Vanished"


def sqlite(backend: Backend) -> bool:
    return isinstance(backend, SQLiteBackend)


def events_table(backend: Backend) -> str:
    found: Any = backend
    return (
        str(found.events_table) if sqlite(backend) else (f'"{found.schema}".{found.events_table}')
    )


def insert_raw(rl: Runledger, topic: str, state: bytes, originator: UUID | None = None) -> int:
    """One stored event written with raw SQL; answers its position in the store."""
    backend = rl.backend
    oid = originator or uuid4()
    key: Any = oid.hex if sqlite(backend) else oid
    with backend.transaction(commit=True) as cursor:
        cursor.execute(
            backend.sql(
                f"INSERT INTO {events_table(backend)} (originator_id, "
                "originator_version, topic, state) VALUES (%s, %s, %s, %s)"
            ),
            [key, 1, topic, state],
        )
    return rl.app.recorder.max_notification_id() or 0


def delete_raw(rl: Runledger, position: int) -> None:
    backend = rl.backend
    column = "rowid" if sqlite(backend) else "notification_id"
    with backend.transaction(commit=True) as cursor:
        cursor.execute(
            backend.sql(f"DELETE FROM {events_table(backend)} WHERE {column} = %s"), [position]
        )


def tables(rl: Runledger) -> set[str]:
    with rl.backend.transaction(commit=False) as cursor:
        if sqlite(rl.backend):
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            return {row["name"] for row in cursor.fetchall()}
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            [schema(rl.backend)],
        )
        return {row["table_name"] for row in cursor.fetchall()}


def schema(backend: Backend) -> str:
    found: Any = backend
    return str(found.schema)

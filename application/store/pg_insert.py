"""PostgreSQL inserts of a save's events in one statement, by a function ``runledger init`` makes.

eventsourcing 9.5 sends each save as a pipelined transaction of six statements (begin, lock
timeout, table lock, NOTIFY, insert, commit), each paid for in the client's CPU whatever the
save's size: most of a sweep's save, which the crash fix makes once per module call
(scripts/MEASUREMENTS.md, "One prepared insert call a save"). ``rl_insert_events`` does the
same work in one prepared call: it takes the same EXCLUSIVE table lock (so positions still
commit in order, which every reader of the store relies on), inserts, and answers the
positions. Like the library's own insert it NOTIFYs the table's channel (the recorder's
``channel_name``), so the library's ``PostgresSubscription`` and a resting runner LISTEN there
instead of polling the store's head. The payload is the schema's name: the channel is named by
the table alone, so stores in other schemas of the database notify it too, and a listener
keeps to its own (the library's subscription reads no payload).

A save that stores a run's end also NOTIFYs a channel of the store's own (``ended_channel``),
which is all a resting runner listens for (services/sweep/pacing.py): a listener pays CPU for
every notification it hears, and every runner heard every insert to learn of a few ends.

A store made by an earlier ``runledger init`` has no such function, or one that does not notify:
its saves go the library's way (which notifies) until ``runledger init`` is run again. One whose
function does not say a run's end (``says_ends``) keeps its runners listening to every insert.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.utils import retry
from psycopg.sql import SQL, Composable, Identifier, Literal

from runledger.domain.run_ends import ENDS

FUNCTION = "rl_insert_events"


def ended_channel(schema: str) -> str:
    """Where this schema's saves say that a run ended: one channel per store, as notifications
    are per database."""
    return "rl_ended_" + hashlib.sha256(schema.encode()).hexdigest()[:20]


def create_statement(recorder: Any) -> Composable:
    """The function, for this store's schema, table and stored-event type."""
    schema = recorder.datastore.schema or "public"
    return SQL(
        "CREATE OR REPLACE FUNCTION {schema}.{function}(events {schema}.{event}[], "
        "lock_timeout text) RETURNS SETOF bigint LANGUAGE plpgsql AS $body$ "
        "BEGIN "
        "PERFORM set_config('lock_timeout', lock_timeout, true); "
        "LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE; "
        "NOTIFY {channel}, {schema_name}; "
        "IF EXISTS (SELECT 1 FROM unnest(events) WHERE topic = ANY(ARRAY[{ends}]::text[])) THEN "
        "PERFORM pg_notify({ended}, {schema_name}); "
        "END IF; "
        "RETURN QUERY INSERT INTO {schema}.{table} AS t "
        "(originator_id, originator_version, topic, state) "
        "SELECT originator_id, originator_version, topic, state FROM unnest(events) "
        "RETURNING notification_id; "
        "END; $body$"
    ).format(
        schema=Identifier(recorder.datastore.schema),
        function=Identifier(FUNCTION),
        event=Identifier(recorder.stored_event_type_name),
        table=Identifier(recorder.events_table_name),
        channel=Identifier(recorder.channel_name),
        schema_name=Literal(schema),
        ends=SQL(", ").join(Literal(topic) for topic in ENDS),
        ended=Literal(ended_channel(schema)),
    )


def says_ends(source: str, schema: str) -> bool:
    """Whether the function (its source) NOTIFYs ``ended_channel`` for every kind of run end."""
    return ended_channel(schema) in source and all(topic in source for topic in ENDS)


def use_function(recorder: Any) -> str | None:
    """Send this recorder's inserts through the function, if the store has it; answers its
    source (None: the store has none that notifies, and saves go the library's way)."""
    datastore = recorder.datastore
    with datastore.get_connection() as conn:
        found = conn.execute(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = %s AND p.proname = %s AND p.prosrc LIKE '%%NOTIFY%%'",
            [datastore.schema, FUNCTION],
        ).fetchone()
    if found is None:
        return None
    call = SQL("SELECT * FROM {schema}.{function}(%b, %s)").format(
        schema=Identifier(datastore.schema), function=Identifier(FUNCTION)
    )
    timeout = f"{datastore.lock_timeout}s"

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(stored_events: Sequence[StoredEvent], **_: Any) -> list[int]:
        if not stored_events:
            return []
        events = [
            recorder.construct_pg_stored_event(
                e.originator_id, e.originator_version, e.topic, e.state
            )
            for e in stored_events
        ]
        with datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(call, (events, timeout), prepare=True)
            return [row[FUNCTION] for row in cursor.fetchall()]

    recorder.insert_events = insert_events
    return str(found["prosrc"])

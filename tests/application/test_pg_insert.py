"""PostgreSQL saves through ``rl_insert_events`` (store/pg_insert.py): one statement that still
takes the table lock, so positions commit in order; conflicts still read as conflicts; a store
without the function saves the library's way."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError
from psycopg.sql import SQL, Identifier

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.application.store.pg_insert import FUNCTION
from runledger.domain.resource import Resource
from tests.support.recorded import AT, entry

pytestmark = pytest.mark.postgres


def schema_of(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def test_a_save_waits_for_the_table_lock_so_positions_commit_in_order(
    pg_rl: Runledger, pg_url: str, pg_admin: str
) -> None:
    recorder = pg_rl.app.recorder
    table = Identifier(schema_of(pg_url), recorder.events_table_name)  # type: ignore[attr-defined]
    saved: list[float] = []

    def save() -> None:
        pg_rl.app.save(entry("later"))
        saved.append(time.monotonic())

    # Another writer's insert, not yet committed: it holds the lock any insert takes, which
    # does not stop a plain insert; only the EXCLUSIVE lock a save takes waits for it.
    with psycopg.connect(pg_admin) as other:
        other.execute(SQL("LOCK TABLE {} IN ROW EXCLUSIVE MODE").format(table))
        saver = threading.Thread(target=save)
        saver.start()
        time.sleep(0.5)
        assert saved == []
        released = time.monotonic()
    saver.join(10)
    assert saved and saved[0] >= released
    assert vars(recorder)["insert_events"].__module__ == "runledger.application.store.pg_insert"


def test_saves_answer_their_positions_and_a_conflict_is_an_integrity_error(
    pg_rl: Runledger,
) -> None:
    first, second = entry("a"), entry("b")
    [one, two] = pg_rl.app.save(first, second)
    assert two.notification.id == one.notification.id + 1
    copy: Resource = pg_rl.app.repository.get(first.id)
    first.claim_revert("w1", AT, AT, 3)
    copy.claim_revert("w2", AT, AT, 3)
    pg_rl.app.save(first)
    with pytest.raises(IntegrityError):
        pg_rl.app.save(copy)
    assert pg_rl.app.repository.get(first.id).claim_worker == "w1"


def test_a_store_without_the_function_saves_the_librarys_way(pg_url: str) -> None:
    schema = schema_of(pg_url)
    with psycopg.connect(pg_url.split("?")[0], autocommit=True) as conn:
        conn.execute(
            SQL("DROP FUNCTION {}").format(Identifier(schema, FUNCTION)),
        )
    rl = bootstrap(Settings(database_url=pg_url), Registry())
    try:
        recorder = rl.app.recorder
        assert "insert_events" not in vars(recorder)
        saved = entry("a")
        rl.app.save(saved)
        assert rl.app.repository.get(saved.id).ref == "a"
    finally:
        rl.close()
    init_store(Settings(database_url=pg_url))  # `runledger init` again makes it
    rl = bootstrap(Settings(database_url=pg_url), Registry())
    try:
        assert "insert_events" in vars(rl.app.recorder)
    finally:
        rl.close()

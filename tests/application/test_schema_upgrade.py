"""A store made by an earlier runledger: its partial indexes tested states with IN lists."""

from __future__ import annotations

from typing import Any

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import NotInitialised
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import initialising
from runledger.application.store.url import store_config
from runledger.projections.backend import Backend, Cursor
from runledger.projections.views.resources import ResourcesView
from tests.application.test_projections import dump, ledger_a_run
from tests.conftest import Factory
from tests.support.world import World

# What runledger init created before the states were tested with ORs, word for word.
EARLIER = [
    """CREATE INDEX {ix_rl_resources}_open ON {rl_resources} (run_id)
        WHERE status IN ('placeholder', 'live', 'failing', 'orphaned') AND terminal = 0""",
    """CREATE INDEX {ix_rl_resources}_unresolved ON {rl_resources} (run_id)
        WHERE status IN ('placeholder', 'live', 'failing', 'drifted', 'orphaned')""",
    """CREATE INDEX {ix_rl_resources}_target ON {rl_resources} (module, kind, ref)
        WHERE status IN ('placeholder', 'live', 'failing', 'drifted', 'orphaned')""",
]
NOW = ["rl_resources_open2", "rl_resources_unresolved2", "rl_resources_target2"]


def make_earlier(url: str) -> None:
    """The store as an earlier runledger left it: the earlier indexes, not today's."""
    with initialising(store_config(url)) as (_, backend, cursor):
        for name in NOW:
            cursor.execute(f"DROP INDEX {backend.qualify(name)}")
        for statement in EARLIER:
            cursor.execute(backend.sql(statement))


def absent(url: str, names: list[str]) -> set[str]:
    with initialising(store_config(url)) as (_, backend, _cursor):
        return backend.absent(names)


def test_an_earlier_store_is_told_to_run_init_which_replaces_its_indexes_and_loses_nothing(
    make_runledger: Factory, store_url: str, world: World
) -> None:
    rl = make_runledger()
    ledger_a_run(rl)
    rl.projector.catch_up()
    before = dump(rl)
    rl.close()
    make_earlier(store_url)

    with pytest.raises(NotInitialised) as raised:
        bootstrap(Settings(database_url=store_url))
    message = str(raised.value)
    assert "run `runledger init`" in message
    assert all(f"index {name}" in message for name in NOW), message

    init_store(Settings(database_url=store_url))
    retired = ["rl_resources_open", "rl_resources_unresolved", "rl_resources_target"]
    assert absent(store_url, [*NOW, *retired]) == set(retired)
    again = make_runledger()
    assert dump(again) == before


def upsert_program(backend: Backend, cursor: Cursor) -> list[Any]:
    view = ResourcesView()
    statement = backend.upsert_statement(view.table, view.columns, view.key)
    cursor.execute("EXPLAIN " + statement, [None] * len(view.columns))
    return [row["opcode"] for row in cursor.fetchall()]


def test_sqlite_writes_a_resources_row_without_building_a_temporary_table(
    tmp_path: Any,
) -> None:
    """SQLite builds the table an IN list of over two values is tested against each time a
    statement runs: for every row an executemany writes, and three times over with the earlier
    indexes. Today's, tested with ORs, build none."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    with initialising(store_config(url)) as (_, backend, cursor):
        assert "OpenEphemeral" not in upsert_program(backend, cursor)
    make_earlier(url)
    with initialising(store_config(url)) as (_, backend, cursor):
        assert "OpenEphemeral" in upsert_program(backend, cursor)

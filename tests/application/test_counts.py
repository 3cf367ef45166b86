"""The counts view (projections/views/counts.py) agrees with counting every run's entries, after
every step of a random walk, at several moments and settings of attempts, on both stores; and
a rebuild, an init and an older store's upgrade leave it so."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import NotInitialised
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import initialising
from runledger.application.store.url import store_config
from runledger.projections.backend import Backend, Cursor
from runledger.projections.pages import _COUNTED, CLEANUP_STATUS_SQL, UNDER_WAY, RunFilter
from runledger.projections.rebuild import rebuild
from runledger.projections.views import counts
from tests.application.test_projections import ledger_a_run
from tests.application.test_properties import (
    LedgerMachine,
    PostgresSchemas,
    SQLiteFiles,
    Stores,
)
from tests.conftest import Factory
from tests.support import by_hand
from tests.support.world import World

LATER = (timedelta(0), timedelta(minutes=5), timedelta(days=1))
ATTEMPTS = (1, 2, 5)


def kept(backend: Backend, cursor: Cursor) -> list[tuple[Any, ...]]:
    cursor.execute(
        f"SELECT what, status, class, n FROM {backend.qualify(counts.COUNTS)} WHERE n <> 0 "
        "ORDER BY what, status, class"
    )
    return [(r["what"], r["status"], r["class"], int(r["n"])) for r in cursor.fetchall()]


def assert_counts_agree(rl: Runledger) -> None:
    """The counts kept by the triggers are the counts made again from the rows, and what they
    answer is what the scan answers."""
    rl.projector.catch_up()
    with rl.backend.transaction(commit=False) as cursor:
        moved = kept(rl.backend, cursor)
        for statement in counts.recount(rl.backend):
            cursor.execute(statement)
        assert moved == kept(rl.backend, cursor)  # rolled back with the transaction
    for later in LATER:
        now = rl.clock() + later
        for attempts in ATTEMPTS:
            assert rl.pages.run_counts(now, attempts) == rl.pages.run_counts_scanned(
                now, attempts
            ), (later, attempts)
    assert rl.pages.unresolved_counts() == rl.pages.unresolved_counts_scanned()
    for later in LATER[:2]:
        for attempts in ATTEMPTS:
            assert_filters_agree(rl, rl.clock() + later, attempts)


CLEANUPS = ("not_required", "pending", "complete", "incomplete", UNDER_WAY)


def assert_filters_agree(rl: Runledger, now: Any, attempts: int) -> None:
    """The runs page filtered by cleanup status (from the tally) lists the runs the scan of
    every run's entries finds."""
    for cleanup in CLEANUPS:
        listed = {
            r for r, _ in rl.pages.runs(RunFilter(cleanup_status=cleanup), 500, None, now, attempts)
        }
        wanted = "pending" if cleanup == UNDER_WAY else cleanup
        running = "AND c.status <> 'running'" if cleanup == UNDER_WAY else ""
        rows = rl.backend.select(
            rl.backend.sql(
                f"SELECT c.run_id FROM ({_COUNTED}) c WHERE ({CLEANUP_STATUS_SQL}) = %s {running}"
            ),
            [attempts, now.timestamp(), wanted],
        )
        assert listed == {UUID(r["run_id"]) for r in rows}, cleanup


class CountedMachine(LedgerMachine):
    @invariant()
    def the_counts_agree_with_the_scan(self) -> None:
        assert_counts_agree(self.ledger)


def walk(stores: Stores, examples: int) -> None:
    machine = type(f"CountedOn{type(stores).__name__}", (CountedMachine,), {"stores": stores})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.slow  # seconds of generated histories: in the slow tier, run first
def test_the_counts_agree_with_the_scan_after_every_step_on_sqlite() -> None:
    walk(SQLiteFiles(), examples=12)


@pytest.mark.slow  # seconds of generated histories: in the slow tier, run first
@pytest.mark.postgres
def test_the_counts_agree_with_the_scan_after_every_step_on_postgres(pg_admin: str) -> None:
    walk(PostgresSchemas(pg_admin), examples=4)


def test_a_run_moves_through_the_counts_as_its_entries_are_given_back(
    make_runledger: Factory, world: World
) -> None:
    rl = make_runledger()
    run = ledger_a_run(rl)
    now, attempts = rl.clock(), rl.settings.max_revert_attempts
    assert ("completed", "pending", 1) in rl.pages.run_counts(now, attempts)
    assert dict(rl.pages.unresolved_counts()) == {"live": 3}
    for entry in rl.queries.unresolved_entries(run):
        by_hand.keep(rl, entry.entry_id, "alice")
    assert rl.pages.run_counts(now, attempts) == [("completed", "complete", 1)]
    assert rl.pages.unresolved_counts() == []
    assert_counts_agree(rl)


def test_a_rebuild_counts_again_what_it_swaps_in(
    make_runledger: Factory, store_url: str, world: World
) -> None:
    rl = make_runledger()
    ledger_a_run(rl)
    ledger_a_run(rl, "second")
    rl.projector.catch_up()
    with rl.backend.transaction(commit=True) as cursor:  # counts gone wrong, as if by hand
        cursor.execute(f"UPDATE {rl.backend.qualify(counts.COUNTS)} SET n = n + 7")
    rebuild(rl.app, rl.backend)
    assert_counts_agree(rl)
    rebuild(rl.app, rl.backend, ["runs"])
    assert_counts_agree(rl)


def make_older(url: str) -> None:
    """The store as runledger left it before the counts: no tally, counts, triggers or the
    runs' started indexes."""
    with initialising(store_config(url)) as (_, backend, cursor):
        counts.drop(backend, cursor)
        for table in (counts.COUNTS, counts.TALLY):
            cursor.execute(f"DROP TABLE {backend.qualify(table)}")
        for index in ("rl_runs_started", "rl_runs_status"):
            cursor.execute(f"DROP INDEX {backend.qualify(index)}")


def test_an_older_store_is_told_to_run_init_which_adds_the_counts_and_the_indexes(
    make_runledger: Factory, store_url: str, world: World
) -> None:
    rl = make_runledger()
    ledger_a_run(rl)
    rl.projector.catch_up()
    rl.close()
    make_older(store_url)
    with pytest.raises(NotInitialised) as raised:
        bootstrap(Settings(database_url=store_url))
    message = str(raised.value)
    assert "run `runledger init`" in message
    for wanted in ("index rl_runs_started", "index rl_run_tally_open", "trigger rl_counted"):
        assert wanted in message, message
    init_store(Settings(database_url=store_url))
    again = make_runledger()
    assert ("completed", "pending", 1) in again.pages.run_counts(
        again.clock(), again.settings.max_revert_attempts
    )
    assert_counts_agree(again)
    ledger_a_run(again, "after")
    assert_counts_agree(again)


def test_init_makes_the_indexes_and_triggers_and_a_second_init_changes_no_count(
    make_runledger: Factory, store_url: str, world: World
) -> None:
    rl = make_runledger()
    ledger_a_run(rl)
    rl.projector.catch_up()
    init_store(Settings(database_url=store_url))
    made = ["rl_runs_started", "rl_runs_status", "rl_run_tally_open", "rl_counts_key"]
    assert rl.backend.absent(made) == set()
    assert counts.missing(rl.backend) == []
    assert_counts_agree(rl)

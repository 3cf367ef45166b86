"""A resting runner on PostgreSQL hears the store's runs' ends (LISTEN, store/notify.py; the
store's insert says them on a channel of its own, store/pg_insert.py) instead of asking its head
at every look: nothing ended in its store, nothing asked; a run ended elsewhere, heard. On a
store whose insert does not say ends apart it hears every insert, as before."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg.sql import SQL

from runledger.application.runledger import Runledger
from runledger.application.services.sweep.pacing import SAFETY_S, Wake
from runledger.application.store.pg_insert import FUNCTION
from tests.conftest import Factory
from tests.support.playing import complete, makes, play, start
from tests.support.world import World


def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


def pg_only(store_url: str) -> None:
    if not store_url.startswith("postgresql"):
        pytest.skip("nothing notifies on SQLite: test_without_a_listener_every_look_asks_the_store")


def quiet(rl: Runledger) -> threading.Event:
    """The runner's ear, once its listener listens and what was on its way has arrived (the
    listener may have started with the runledger: half a second with nothing heard)."""
    heard = rl.app.hearing.heard()
    listener = rl.app.hearing.listener()
    assert heard is not None and listener is not None and listener.listening.wait(10)
    heard.clear()
    while heard.wait(0.5):
        heard.clear()
    return heard


def test_a_run_ended_elsewhere_is_heard_and_nothing_is_asked_before(
    store_url: str, make_runledger: Factory, world: World
) -> None:
    pg_only(store_url)
    rl = make_runledger()
    run = play(rl, makes("spawn", "c1"))
    heard = quiet(rl)
    wake = Wake(rl.app.recorder, heard)
    wake.mark()
    asked = wake._asked
    for _ in range(20):  # a second of looks at the default pace, none of them a question
        assert not wake.runs_ended()
    assert wake._asked == asked and time.monotonic() - asked < SAFETY_S
    complete(make_runledger(), run)  # another process ends the run
    assert heard.wait(10)
    assert wake.runs_ended() == [run]


def test_without_a_listener_every_look_asks_the_store(make_runledger: Factory) -> None:
    rl = make_runledger()  # SQLite's way, and a store whose runner does not listen
    wake = Wake(rl.app.recorder)
    wake.mark()
    asked = wake._asked
    time.sleep(0.01)
    assert not wake.runs_ended()
    assert wake._asked > asked


def test_a_resting_runner_hears_a_runs_end_and_not_the_stores_other_inserts(
    store_url: str, make_runledger: Factory, world: World
) -> None:
    pg_only(store_url)
    rl = make_runledger()
    assert rl.app.hearing.ends_said
    heard = quiet(rl)
    elsewhere = make_runledger()
    run = play(elsewhere, makes("spawn", "c1", "c2"))  # a run started, steps done, entries made
    assert not heard.wait(1.0)
    complete(elsewhere, run)
    assert heard.wait(10)


def test_on_a_store_whose_insert_does_not_say_ends_a_runner_hears_every_insert(
    store_url: str, make_runledger: Factory, world: World
) -> None:
    pg_only(store_url)
    schema = store_url.rsplit("schema=", 1)[1]
    with psycopg.connect(store_url.split("?")[0], autocommit=True) as conn:
        [row] = conn.execute(
            "SELECT pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname = %s",
            [schema, FUNCTION],
        ).fetchall()
        # The function as an earlier `runledger init` made it: it notifies every insert only.
        older, cut = re.subn(r"IF EXISTS .*? END IF;", "", row[0], flags=re.S)
        assert cut == 1
        conn.execute(SQL(older))
    rl = make_runledger()
    assert not rl.app.hearing.ends_said
    heard = quiet(rl)
    start(make_runledger(), makes("spawn", "c1"))
    assert heard.wait(10)

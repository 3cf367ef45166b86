"""A resting runner on PostgreSQL hears the store's inserts (LISTEN, store/notify.py) instead of
asking its head at every look: nothing inserted in its store, nothing asked (stores in other
schemas of the database, other tests' among them, notify the same channel under their own
name); a run ended elsewhere, heard."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from runledger.application.services.sweep.pacing import SAFETY_S, Wake
from tests.conftest import Factory
from tests.support.playing import complete, makes, play
from tests.support.world import World


def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


def test_a_run_ended_elsewhere_is_heard_and_nothing_is_asked_before(
    store_url: str, make_runledger: Factory, world: World
) -> None:
    if not store_url.startswith("postgresql"):
        pytest.skip("nothing notifies on SQLite: the test below")
    rl = make_runledger()
    run = play(rl, makes("spawn", "c1"))
    heard = rl.app.heard()
    assert heard is not None
    listener = rl.app.listener()
    assert listener is not None and listener.listening.wait(10)
    wake = Wake(rl.app.recorder, heard)
    # The listener may have started with the runledger: play's own inserts can still be on
    # their way to it. Half a second with nothing heard: they have all arrived.
    heard.clear()
    while heard.wait(0.5):
        heard.clear()
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

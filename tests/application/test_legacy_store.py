"""A store written by runledger 0.1 opens, rebuilds, replays and finishes its work today.

The fixture's events name their classes by 0.1's topics (``domain.resource:Resource.Reverted``);
``tests/support/fixtures/make_legacy_store.py`` says how it was made.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.rebuild import rebuild
from tests.application.test_history import KEYS, Dump, dump
from tests.support.fixtures.make_legacy_store import FESTIVAL, FIXTURE, OWING, SPAWN
from tests.support.world import World


@pytest.fixture
def legacy(tmp_path: Path) -> str:
    copy = tmp_path / "legacy.sqlite3"
    shutil.copyfile(FIXTURE, copy)
    url = f"sqlite:///{copy}"
    init_store(Settings(database_url=url))
    return url


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def rl(legacy: str, world: World) -> Iterator[Runledger]:
    registry = Registry()
    world.install(registry, SPAWN)
    with bootstrap(Settings(database_url=legacy), registry) as opened:
        yield opened


def stored_topics(url: str) -> set[str]:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        return {topic for (topic,) in db.execute("SELECT DISTINCT topic FROM stored_events")}


def test_the_fixture_holds_every_kind_of_event_under_its_old_topic(legacy: str) -> None:
    topics = stored_topics(legacy)
    assert len(topics) == 25
    assert all(t.startswith("domain.") for t in topics)


NEWER_VIEWS = {
    "tokens": "rl_tokens",
    "definitions": "rl_definitions",
    "occurrences": "rl_occurrences",
    "deliveries": "rl_deliveries",
}
"""Views 0.1 did not have: their tables stay empty."""


def test_rebuilt_projections_equal_the_ones_the_old_version_wrote(rl: Runledger) -> None:
    written_then = dump(rl)
    then = [t for t in KEYS if t not in NEWER_VIEWS.values()]
    assert all(written_then[t] for t in then), "every table 0.1 wrote has rows to compare"
    rl.projector.catch_up()
    caught_up = dump(rl)
    # A view 0.1 did not have reads the old events once and applies none of them.
    assert without_newer(caught_up) == without_newer(written_then), "nothing else was left"
    report = rebuild(rl.app, rl.backend)
    assert report.swapped and report.differences == []
    assert dump(rl) == caught_up


def without_newer(tables: Dump) -> Dump:
    return {
        name: [row for row in rows if not (name == "rl_tracking" and row[0] in NEWER_VIEWS)]
        for name, rows in tables.items()
    }


def test_an_old_run_replays_to_its_end(rl: Runledger) -> None:
    replay = rl.history.replay(FESTIVAL)
    assert (replay.name, replay.run_status, replay.cleanup_status) == (
        "festival",
        "completed",
        "complete",
    )
    assert len(replay.lines) == 36
    assert {line.event for line in replay.lines} >= {
        "Started",
        "Recorded",
        "Superseded",
        "RevertClaimed",
        "Reverted",
        "RevertFailed",
        "Drifted",
        "Orphaned",
        "Expired",
        "AttemptsReset",
        "Kept",
        "Completed",
    }


def test_an_old_run_left_owing_is_given_back(rl: Runledger, world: World) -> None:
    assert rl.history.replay(OWING).cleanup_status == "pending"
    rl.cleanup.sweep("w1")
    assert world.reverted_refs == {"o1": 1}
    assert rl.history.replay(OWING).cleanup_status == "complete"
    rl.projector.catch_up()
    row = rl.queries.run(OWING, rl.clock(), rl.settings.max_revert_attempts)
    assert row is not None and row.cleanup_status == "complete"

"""A rebuild folds each aggregate's events in memory and writes each row once; the tables it
swaps in equal, row for row, what catching up event by event gives, on SQLite and PostgreSQL.

Histories are drawn at random from the domain's own commands and saved in interleaved batches,
so that an aggregate's events lie pages apart; pages and the rows kept in memory are made tiny,
so that rows are written out, read back and written again.
"""

from __future__ import annotations

import gc
import json
import logging
import random
from collections.abc import Callable, Iterator
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import runledger.projections.fold as fold_module
import runledger.projections.rebuild as rebuild_module
from runledger.application.errors import ProjectionStuck
from runledger.application.runledger import Runledger
from runledger.domain.errors import DomainError
from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.domain.runlog import LogEntry
from runledger.domain.runner_record import RunnerRecord
from runledger.domain.step import Step
from runledger.domain.token import ApiToken
from runledger.projections.folders import RowFolder, Spill
from runledger.projections.projector import Projector
from runledger.projections.rebuild import rebuild
from tests.application.test_history import KEYS, dump, tables
from tests.application.test_rules_once import step_once
from tests.support.corrupt import RUN_STARTED, UNKNOWN_TOPIC, events_table, insert_raw, sqlite
from tests.support.playing import START

CAREFUL = "replaying carefully"


def a_run(rng: random.Random, at: datetime) -> tuple[Run, list[Step], list[Resource]]:
    run = Run.start(uuid4(), f"run {rng.randrange(1000)}", at)
    steps, entries = [], []
    for s in range(rng.randint(1, 3)):
        step = Step(run.id, f"s{s}", 1, "world.spawn", {"n": s}, at)
        step.claim_dispatch("w1", at, at + timedelta(seconds=30))
        if rng.random() < 0.7:
            step.succeed("w1", 2, at)
        else:
            step.fail("w1", "the shard hiccuped", at, final=rng.random() < 0.5)
        steps.append(step)
        for i in range(rng.randint(0, 4)):
            entries.append(
                Resource(
                    run_id=run.id,
                    step=f"s{s}",
                    kind=rng.choice(["creature", "@step", "override"]),
                    ref=f"c{s}-{i}",
                    module="world",
                    action="world.spawn",
                    idempotency_key=f"{run.id}:s{s}",
                    payload=rng.choice([None, {"hp": i, "at": at, "name": "é<b>"}]),
                    member_key=rng.choice([None, "m"]),
                    until=rng.choice([None, at + timedelta(hours=1)]),
                    at=at,
                )
            )
    return run, steps, entries


def random_history(rl: Runledger, seed: int, runs: int) -> None:
    """Runs started, their entries moved by random commands in later saves, runs ended, log
    lines, runners and tokens: all saved in interleaved batches."""
    rng = random.Random(seed)
    at = START + timedelta(days=seed % 7)
    moving: list[tuple[Run, list[Any]]] = []
    for _ in range(runs):
        at += timedelta(seconds=rng.choice([1, 10, 100]))
        run, steps, entries = a_run(rng, at)
        rl.app.save(run, *steps, *entries)
        moving.append((run, entries))
        for run, entries in rng.sample(moving, k=min(len(moving), 2)):
            for entry in rng.sample(entries, k=len(entries) // 2):
                for _ in range(rng.randint(1, 3)):
                    step_once(entry, rng, at)
            line = LogEntry(f"{run.id}:{uuid4()}", run.id, "cleanup.swept", {"n": rng.random()}, at)
            rl.app.save(*entries, line)
        if rng.random() < 0.4:
            ended = moving.pop(0)[0]
            with suppress(DomainError):
                ended.complete(at) if rng.random() < 0.5 else ended.abort("rain", at)
            rl.app.save(ended)
        if rng.random() < 0.2:
            runner = RunnerRecord.start(uuid4(), "w1", "host", 7, ["world"], ["a"], [], at)
            token = ApiToken("gardener", "viewer", f"{rng.random()}", "alice", at)
            if rng.random() < 0.5:
                runner.stop(at)
                token.revoke("alice", at)
            rl.app.save(runner, token)


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> Callable[[int, int], None]:
    """Pages of a few events and a few rows kept: every row goes out and comes back."""

    def set_to(page: int, kept: int) -> None:
        monkeypatch.setattr(rebuild_module, "REBUILD_PAGE", page)
        monkeypatch.setattr(fold_module, "ROWS_KEPT", kept)

    return set_to


@pytest.fixture
def careful(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], bool]]:
    """Whether a rebuild fell back to replaying through the live projector."""
    with caplog.at_level(logging.INFO, logger="runledger.rebuild"):
        yield lambda: any(CAREFUL in r.getMessage() for r in caplog.records)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32),
    page=st.integers(1, 60),
    kept=st.integers(1, 80),
    live_page=st.integers(1, 40),
)
def test_a_rebuild_gives_the_tables_catching_up_event_by_event_gives_for_any_history(
    rl: Runledger,
    tiny: Callable[[int, int], None],
    careful: Callable[[], bool],
    seed: int,
    page: int,
    kept: int,
    live_page: int,
) -> None:
    random_history(rl, seed, runs=6)
    Projector(rl.app, rl.backend, page=live_page).catch_up()
    live = dump(rl)
    tiny(page, kept)
    report = rebuild(rl.app, rl.backend)
    assert report.swapped and report.position == rl.app.recorder.max_notification_id()
    assert dump(rl) == live
    assert not careful(), "nothing was to blame: the quick path folded everything"


def test_events_saved_while_a_rebuild_replays_are_in_the_tables_it_swaps_in(
    rl: Runledger, tiny: Callable[[int, int], None]
) -> None:
    random_history(rl, seed=9, runs=6)
    tiny(20, 30)
    during: list[int] = []

    def meanwhile(count: int, reached: int) -> None:
        if not during:
            random_history(rl, seed=10, runs=3)
            during.append(rl.app.recorder.max_notification_id() or 0)

    report = rebuild(rl.app, rl.backend, progress=meanwhile)
    assert during and report.position == during[0] == rl.app.recorder.max_notification_id()
    assert report.events < report.position, "the replay stopped where the store was when it began"
    rebuilt = dump(rl)
    with rl.backend.transaction(commit=True) as cursor:
        for table in KEYS:
            if table != "rl_tracking":
                cursor.execute(rl.backend.sql(f"DELETE FROM {{{table}}}"))
        cursor.execute(rl.backend.sql("UPDATE {rl_tracking} SET position = 0"))
    rl.projector.catch_up()
    assert dump(rl) == rebuilt


def test_rows_written_out_and_moved_again_are_read_back_and_upserted(
    rl: Runledger,
    tiny: Callable[[int, int], None],
    careful: Callable[[], bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    random_history(rl, seed=7, runs=12)
    rl.projector.catch_up()
    live = dump(rl)
    read_back: list[list[str]] = []
    upserted: list[int] = []
    original_read, original_write = RowFolder.read_back, Spill.write

    def reading(self: RowFolder, backend: Any, cursor: Any, keys: list[str]) -> None:
        read_back.append(keys)
        original_read(self, backend, cursor, keys)

    def writing(self: Spill, backend: Any, cursor: Any) -> None:
        upserted.append(len(self.again))
        original_write(self, backend, cursor)

    monkeypatch.setattr(RowFolder, "read_back", reading)
    monkeypatch.setattr(Spill, "write", writing)
    tiny(25, 10)
    rebuild(rl.app, rl.backend)
    assert dump(rl) == live
    assert sum(map(len, read_back)) > 5 and sum(upserted) > 5, "not vacuous"
    assert not careful()


def test_a_rebuild_keeps_no_more_rows_in_memory_than_its_bound(
    rl: Runledger, tiny: Callable[[int, int], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    random_history(rl, seed=3, runs=15)
    kept: list[int] = []
    original = fold_module._spilled

    def spilled(going: list[Any], keep: int) -> list[Spill]:
        found = original(going, keep)
        kept.append(sum(len(folder) for folder in going))
        return found

    monkeypatch.setattr(fold_module, "_spilled", spilled)
    tiny(30, 40)
    rebuild(rl.app, rl.backend)
    assert max(kept) <= 40 and kept[-1] == 0
    assert len(kept) > 5 and max(kept) > 20, "not vacuous: rows were kept, then let go"


def stuck_by(rl: Runledger, topic: str, state: bytes, of: tuple[UUID, int] | None = None) -> int:
    """A store with an event some view cannot apply, between two runs; answers its position.
    ``of``: the aggregate and version it is stored as (else a new aggregate, at version 2)."""
    random_history(rl, seed=1, runs=4)
    rl.projector.catch_up()
    originator, version = of or (uuid4(), 2)
    position = insert_raw(rl, topic, state)  # at version 1 of a new aggregate: moved below
    column = "rowid" if sqlite(rl.backend) else "notification_id"
    with rl.backend.transaction(commit=True) as cursor:
        cursor.execute(
            rl.backend.sql(
                f"UPDATE {events_table(rl.backend)} SET originator_id = %s, "
                f"originator_version = %s WHERE {column} = %s"
            ),
            [originator.hex if sqlite(rl.backend) else originator, version, position],
        )
    random_history(rl, seed=2, runs=3)
    return position


def claimed_beyond_any_integer(rl: Runledger) -> int:
    """A claim of an entry that exists, whose attempt no INTEGER column holds (an event written
    before huge integers were refused)."""
    random_history(rl, seed=1, runs=1)
    rl.projector.catch_up()
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT entry_id, version FROM {rl_resources} LIMIT 1"))
        entry = cursor.fetchone()
    moment = {"_type_": "datetime_iso", "_data_": START.isoformat()}
    state = {"timestamp": moment, "attempt": 2**70, "worker": "w1", "expires_at": moment}
    # A NaN beside it, which orjson refuses: the standard parser reads the attempt as an int
    # (orjson would read it as a float, which SQLite stores as REAL without complaint).
    claim = json.dumps(state | {"at": moment, "noise": float("nan")}).encode()
    return stuck_by(rl, CLAIMED, claim, (UUID(entry["entry_id"]), entry["version"] + 1))


KEPT = "runledger.domain.resource:Resource.Kept"
CLAIMED = "runledger.domain.resource:Resource.RevertClaimed"
BAD: dict[str, Callable[[Runledger], int]] = {
    "undecodable": lambda rl: stuck_by(rl, RUN_STARTED, b'{"name": "half'),
    "of a topic nobody knows": lambda rl: stuck_by(rl, UNKNOWN_TOPIC, b"{}"),
    # a verdict for an entry whose Recorded is not in the store: no row to read back or move
    "with no row to move": lambda rl: stuck_by(rl, KEPT, b'{"by": "x"}'),
    "with a value the store refuses": claimed_beyond_any_integer,
}


@pytest.mark.parametrize("bad", BAD)
def test_a_rebuild_meeting_an_event_no_view_can_apply_says_what_catching_up_says(
    rl: Runledger, careful: Callable[[], bool], bad: str
) -> None:
    position = BAD[bad](rl)
    before = dump(rl)
    with pytest.raises(ProjectionStuck) as rebuilt:
        rebuild(rl.app, rl.backend)
    assert careful(), "the quick path handed the blame to the careful one"
    assert f"the event at position {position}" in str(rebuilt.value)
    assert not {t for t in tables(rl) if t.endswith("_next")}
    assert dump(rl) == before, "the live tables were not touched"
    with pytest.raises(ProjectionStuck) as caught_up:
        rl.projector.catch_up()
    assert str(rebuilt.value) == str(caught_up.value)


def test_the_cycle_collector_is_on_again_after_a_rebuild_even_one_that_failed(
    rl: Runledger,
) -> None:
    random_history(rl, seed=5, runs=2)
    rebuild(rl.app, rl.backend)
    assert gc.isenabled()
    insert_raw(rl, UNKNOWN_TOPIC, b"{}")
    with pytest.raises(ProjectionStuck):
        rebuild(rl.app, rl.backend)
    assert gc.isenabled()

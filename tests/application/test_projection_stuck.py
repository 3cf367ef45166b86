"""A projection that cannot apply an event says which, where and why, and never skips it."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from runledger.application.errors import ProjectionStuck
from runledger.application.runledger import Runledger
from tests.application.test_projections import as_they_stand, ledger_a_run
from tests.conftest import Cli, Factory
from tests.support.corrupt import RUN_STARTED, UNKNOWN_TOPIC, delete_raw, events_table, insert_raw
from tests.support.world import World

BAD_JSON = b'{"name": "half'


def stuck_store(
    rl: Runledger, topic: str = RUN_STARTED, state: bytes = BAD_JSON
) -> tuple[UUID, int, UUID, UUID]:
    """A run before the bad event, the bad event, a run after it: (before, position, bad id,
    after)."""
    before = ledger_a_run(rl, "before")
    rl.projector.catch_up()
    bad = uuid4()
    position = insert_raw(rl, topic, state, bad)
    # Every read is fresh, and a fresh read past the stuck event refuses: the run after it is
    # played with the views read as they stand.
    setattr(rl.projector, "catch_up", lambda *_: 0)  # noqa: B010 (an instance's own attribute)
    try:
        after = ledger_a_run(rl, "after")
    finally:
        delattr(rl.projector, "catch_up")
    return before, position, bad, after


def run_ids(rl: Runledger) -> set[UUID]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT run_id FROM {rl_runs}"))
        return {UUID(row["run_id"]) for row in cursor.fetchall()}


def test_an_event_whose_state_is_not_json_stops_its_views_just_before_it_and_says_why(
    rl: Runledger,
) -> None:
    before, position, bad, _ = stuck_store(rl)
    with pytest.raises(ProjectionStuck) as raised:
        rl.projector.catch_up()
    message = str(raised.value)
    assert message.startswith("projections run_log, runs cannot apply the event at position")
    assert f"position {position} (topic '{RUN_STARTED}', originator {bad}, version 1)" in message
    assert "its stored state cannot be decoded (JSONDecodeError" in message
    assert "cannot reach" not in message and "\n" not in message
    assert {s.view for s in raised.value.stuck} == {"runs", "run_log"}
    positions = rl.projector.positions()
    head = rl.app.recorder.max_notification_id()
    assert positions["runs"] == positions["run_log"] == position - 1
    # the views that do not read Run.Started went on past it
    assert positions["resources"] == positions["steps"] == head
    standing = as_they_stand(rl)  # a fresh read would say the projections are stuck
    assert standing.entries_named("c0") and len(standing.entries_named("c0")) == 2
    assert run_ids(rl) == {before}  # nothing after the event is projected by the stuck view


def test_an_event_of_a_topic_nobody_knows_stops_every_view_just_before_it(
    rl: Runledger,
) -> None:
    _, position, bad, _ = stuck_store(rl, UNKNOWN_TOPIC, b"{}")
    with pytest.raises(ProjectionStuck) as raised:
        rl.projector.catch_up()
    assert "its topic names no event class runledger knows" in str(raised.value)
    assert f"originator {bad}, version 1" in str(raised.value)
    assert set(rl.projector.positions().values()) == {position - 1}


def test_a_topic_naming_a_foreign_module_is_never_imported(rl: Runledger) -> None:
    stuck_store(rl, "antigravity:fly", b"{}")
    with pytest.raises(ProjectionStuck, match="no event class runledger knows"):
        rl.projector.catch_up()
    import sys

    assert "antigravity" not in sys.modules


def test_a_stuck_projection_goes_on_by_itself_once_its_event_is_repaired(
    rl: Runledger,
) -> None:
    before, position, _, after = stuck_store(rl)
    for _ in range(3):
        with pytest.raises(ProjectionStuck):
            rl.projector.catch_up()
    delete_raw(rl, position)
    rl.projector.catch_up()
    assert run_ids(rl) == {before, after}
    head = rl.app.recorder.max_notification_id()
    assert set(rl.projector.positions().values()) == {head}


def test_another_process_finds_the_same_stuck_event(make_runledger: Factory) -> None:
    first, second = make_runledger(), make_runledger()
    _, position, _, _ = stuck_store(first)
    with pytest.raises(ProjectionStuck) as one:
        first.projector.catch_up()
    with pytest.raises(ProjectionStuck) as other:
        second.projector.catch_up()
    assert str(one.value) == str(other.value)
    assert second.projector.positions()["runs"] == position - 1


def env(store_url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "RUNLEDGER_DATABASE_URL": store_url,
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
    }


@pytest.mark.slow
def test_every_command_that_hits_a_stuck_projection_exits_1_with_its_sentence(
    cli: Cli,
    rl: Runledger,
    store_url: str,
    tmp_path: Path,
) -> None:
    before, position, _, _ = stuck_store(rl)
    for args in (
        ["runs"],
        ["log", str(before)],
        ["tick"],
        ["rebuild", "--verify"],
        ["rebuild"],
        ["projections"],
    ):
        done = cli(*args, cwd=tmp_path, env=env(store_url, tmp_path))
        out = done.stdout + done.stderr
        assert done.returncode == 1, (args, out)
        assert f"cannot apply the event at position {position}" in done.stdout, (args, out)
        assert "Traceback" not in out and "cannot reach" not in out, (args, out)


@pytest.mark.slow
def test_runledger_projections_shows_each_position_lag_and_where_it_is_stuck(
    cli: Cli,
    rl: Runledger,
    store_url: str,
    tmp_path: Path,
) -> None:
    _, position, bad, _ = stuck_store(rl)
    head = rl.app.recorder.max_notification_id() or 0
    done = cli("projections", cwd=tmp_path, env=env(store_url, tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {
        line.split()[1]: line
        for line in done.stdout.splitlines()
        if "│" in line and line.split()[1] in ("runs", "resources", "steps", "run_log")
    }
    assert set(rows) == {"runs", "resources", "steps", "run_log"}, done.stdout
    for name in ("runs", "run_log"):
        assert f"│ {position - 1} " in rows[name] and f"│ {head - position + 1} " in rows[name]
        assert f"│ {position} " in rows[name] and str(bad) in rows[name]
        assert "cannot be decoded" in rows[name]
    assert "cannot be decoded" not in rows["steps"] + rows["resources"]
    # the trial was rolled back: nothing moved
    assert rl.projector.positions() == {"runs": 0, "run_log": 0, "resources": 0, "steps": 0} or (
        rl.projector.positions()["runs"] < position
    )


def test_the_runner_says_once_when_it_is_stuck_and_once_when_it_is_clear(
    rl: Runledger,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, position, _, _ = stuck_store(rl)
    runner = rl.runner("w1")
    stop = threading.Event()
    ticks: list[int] = []
    tried = [0]
    legs = runner._tick

    def counted(halt: threading.Event) -> Any:
        tried[0] += 1
        return legs(halt)

    runner._tick = counted  # type: ignore[method-assign, assignment]
    worker = threading.Thread(target=lambda: ticks.append(runner.run(0.01, stop)))
    with caplog.at_level(logging.WARNING, logger="runledger.runner"):
        worker.start()
        wait_until(lambda: len(caplog.records) >= 1)
        # Many more ticks, each stuck: counted, not slept for, so a busy machine waits longer.
        wait_until(lambda: tried[0] > 10)
        stuck = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(caplog.records) == len(stuck) == 1, [r.getMessage() for r in caplog.records]
        assert f"cannot apply the event at position {position}" in stuck[0].getMessage()
        assert stuck[0].exc_info is None  # a sentence, not a traceback every tick
        delete_raw(rl, position)
        wait_until(lambda: len(caplog.records) >= 2)
        time.sleep(0.2)
        stop.set()
        worker.join(10)
    assert len(caplog.records) == 2, [r.getMessage() for r in caplog.records]
    assert caplog.records[1].getMessage().startswith("clear again")
    assert ticks and ticks[0] > 10


def wait_until(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the condition never held")
        time.sleep(0.01)


def test_a_legacy_nul_in_a_name_is_projected_or_named_never_skipped(rl: Runledger) -> None:
    """A NUL no encoder lets in any more, written by raw SQL: PostgreSQL refuses it in a text
    column (SQLite keeps it). The view shows the run or stops before it saying why; it never
    skips it."""
    import json

    before = ledger_a_run(rl, "before")
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(
            rl.backend.sql(
                f"SELECT topic, state FROM {events_table(rl.backend)} WHERE topic = %s LIMIT 1"
            ),
            [RUN_STARTED],
        )
        found = cursor.fetchone()
    state = json.loads(bytes(found["state"]))
    bad = uuid4()
    position = insert_raw(
        rl, RUN_STARTED, json.dumps({**state, "name": "nul\x00byte"}).encode(), bad
    )
    try:
        rl.projector.catch_up()
    except ProjectionStuck as stuck:
        assert f"position {position}" in str(stuck) and "DataError" in str(stuck)
        assert rl.projector.positions()["runs"] == position - 1
        assert run_ids(rl) == {before}
    else:
        assert run_ids(rl) == {before, bad}


@pytest.mark.slow
def test_a_hostile_topic_is_shown_as_text_on_one_line(
    cli: Cli,
    rl: Runledger,
    store_url: str,
    tmp_path: Path,
) -> None:
    topic = "[bold red]ALERT[/bold red]\n\x1b[31m\u2028[/]:x"
    _, position, _, _ = stuck_store(rl, topic, b"{}")
    done = cli("runs", cwd=tmp_path, env=env(store_url, tmp_path))
    assert done.returncode == 1
    out = done.stdout.strip()
    assert len(out.splitlines()) == 1 and "\x1b" not in out, out
    assert "[bold red]ALERT[/bold red]\\n\\x1b[31m\\u2028[/]:x" in out, out
    assert f"position {position}" in out and "no event class runledger knows" in out


@pytest.fixture(autouse=True)
def played(world: World) -> World:
    """The runs ledger_a_run plays need the world that answers their steps."""
    return world

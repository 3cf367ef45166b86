"""An idle runner writes its heartbeat and nothing else: a catch-up with nothing new only reads
(issue 8, case 9), and a heartbeat is one row overwritten, never an event (issue 9)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from tests.support.corrupt import schema, sqlite
from tests.support.playing import GAME, Clock, phase, runledgers, spec, step
from tests.support.reading import tick
from tests.support.world import World

SPAWN = "game.spawn"
TABLES = (
    "ledger_events",
    "rl_tracking",
    "rl_runs",
    "rl_resources",
    "rl_steps",
    "rl_run_log",
    "rl_runners",
    "rl_definitions",
    "rl_occurrences",
)
"""Every table but rl_heartbeats, which an idle runner does write."""


def sqlite_writes(rl: Runledger) -> Callable[[], Any]:
    """Every row an INSERT, UPDATE or DELETE touches in the measured tables, counted by
    triggers (an UPDATE that sets a column to itself fires them too), as a count that only a
    committed write moves."""
    path = Path(rl.settings.database_url.removeprefix("sqlite:///"))
    watcher = sqlite3.connect(path, isolation_level=None)
    events_table: str = getattr(rl.backend, "events_table")  # noqa: B009
    watcher.execute("CREATE TABLE written (n INTEGER NOT NULL)")
    watcher.execute("INSERT INTO written VALUES (0)")
    for table in (events_table, *TABLES[1:]):
        for what in ("INSERT", "UPDATE", "DELETE"):
            watcher.execute(
                f"CREATE TRIGGER counted_{table}_{what} AFTER {what} ON {table} "
                "BEGIN UPDATE written SET n = n + 1; END"
            )

    def seen() -> Any:
        return watcher.execute("SELECT n FROM written").fetchone()[0]

    return seen


def postgres_writes(rl: Runledger, admin: str) -> Callable[[], Any]:
    """Every row's version (xmin, ctid) in the measured tables: an UPDATE, even one that sets a
    column to itself, makes a new row version; an INSERT or DELETE changes the rows."""
    name = schema(rl.backend)

    def seen() -> Any:
        found = {}
        with psycopg.connect(admin, autocommit=True) as conn:
            for table in TABLES:
                rows = conn.execute(
                    f'SELECT xmin::text, ctid::text FROM "{name}".{table} ORDER BY 2'
                ).fetchall()
                found[table] = rows
        return found

    return seen


def beats(rl: Runledger) -> list[tuple[str, float]]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(rl.backend.sql("SELECT runner_id, beat_at FROM {rl_heartbeats}"))
        return [(row["runner_id"], row["beat_at"]) for row in cursor.fetchall()]


def test_an_idle_runner_writes_its_heartbeat_and_nothing_else(
    store_url: str, registry: Registry
) -> None:
    game, clock = World(name=GAME), Clock()
    game.install(registry, SPAWN)
    with runledgers(store_url, registry, clock) as open_one:
        rl = open_one()
        rl.runs.start(spec(phase("only", step("a", SPAWN)), name="done and given back"))
        waiting = spec(
            phase("one", step("b", SPAWN), advance="manual"),
            phase("two", step("c", SPAWN)),
            name="waiting for a person",
        )
        rl.runs.start(waiting)
        tick(rl, 4)
        runner = rl.runner("idle")
        runner.join()  # its Started event and first heartbeat: before the measured window
        rl.projector.catch_up()
        admin = store_url.partition("?")[0]
        writes = sqlite_writes(rl) if sqlite(rl.backend) else postgres_writes(rl, admin)
        before, beat_before = writes(), beats(rl)
        stop = threading.Event()
        ticks: list[int] = []
        worker = threading.Thread(target=lambda: ticks.append(runner.run(0.01, stop)))
        worker.start()
        time.sleep(0.5)
        clock.advance(1)  # the beats from here on say a later time
        time.sleep(0.5)
        after, beat_after = writes(), beats(rl)
        stop.set()
        worker.join(10)
        assert ticks and ticks[0] >= 10
        assert runner.trouble is None
        assert after == before
        assert beat_before == [(str(runner_id(rl)), clock.now.timestamp() - 1)]
        assert beat_after == [(str(runner_id(rl)), clock.now.timestamp())]
        assert writes() != before  # the measure does see a write: leaving records Stopped


def runner_id(rl: Runledger) -> Any:
    rl.projector.catch_up()
    (info,) = rl.fleet.listing(rl.clock())
    return info.runner_id

"""An idle runner writes nothing: a catch-up with nothing new only reads (issue 8, case 9)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from application.bootstrap import Runledger
from application.modules import Registry
from tests.corrupt import schema, sqlite
from tests.game import Clock, Game, phase, runledgers, spec, step
from tests.reading import tick

SPAWN = "game.spawn"
TABLES = ("ledger_events", "rl_tracking", "rl_runs", "rl_resources", "rl_steps", "rl_run_log")


def sqlite_writes(rl: Runledger) -> Callable[[], Any]:
    """What a write changes: the rows counted by total_changes() on the store's own connections
    (SQLite counts an UPDATE that sets a column to itself, though it may write no page), and
    what any commit shows outside: data_version for a watching connection, the files' size and
    time."""
    path = Path(rl.settings.database_url.removeprefix("sqlite:///"))
    watcher = sqlite3.connect(path)
    pool: Any = getattr(rl.app.recorder, "datastore").pool  # noqa: B009
    first: dict[int, int] = {}

    def seen() -> Any:
        # the pool's idle connections (the runner has stopped): every one the ticks used
        changes = {id(c): c._sqlite_conn.total_changes for c in pool._pool}
        for key, count in changes.items():
            first.setdefault(key, count)
        changed = sum(count - first[key] for key, count in changes.items())
        files = [p for p in (path, path.with_name(path.name + "-wal")) if p.exists()]
        version = watcher.execute("PRAGMA data_version").fetchone()[0]
        return changed, version, [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]

    return seen


def postgres_writes(rl: Runledger, admin: str) -> Callable[[], Any]:
    """Every row's version (xmin, ctid) in the schema's tables: an UPDATE, even one that sets a
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


def test_an_idle_runner_writes_nothing(store_url: str, registry: Registry) -> None:
    game, clock = Game(), Clock()
    game.install(registry, SPAWN)
    with runledgers(store_url, registry, clock) as open_one:
        rl = open_one()
        rl.runs.start(spec(phase("only", step("a", SPAWN)), name="done and given back"))
        waiting = spec(phase("one", step("b", SPAWN), advance="manual"),
                       phase("two", step("c", SPAWN)), name="waiting for a person")
        rl.runs.start(waiting)
        tick(rl, 4)
        admin = store_url.partition("?")[0]
        writes = sqlite_writes(rl) if sqlite(rl.backend) else postgres_writes(rl, admin)
        before = writes()
        runner = rl.runner("idle")
        stop = threading.Event()
        ticks: list[int] = []
        worker = threading.Thread(target=lambda: ticks.append(runner.run(0.01, stop)))
        worker.start()
        time.sleep(1.0)
        stop.set()
        worker.join(10)
        assert ticks and ticks[0] >= 10
        assert runner.trouble is None
        assert writes() == before
        rl.runs.start(spec(phase("x", step("d", SPAWN)), name="one more"))
        assert writes() != before  # the measure does see a write

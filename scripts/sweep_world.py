"""What the sweep benchmarks share: a fresh store of either engine, one instant module, runs
ledgered through the application, and the same open work copied for the plain-SQL sweep."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from runledger.application.bootstrap import init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from scripts.sweep_sql import Sql

PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
ACTION = "bench.spawn"
MODULE = "bench"
COPIED = ("rl_runs", "rl_resources", "rl_run_log")
"""The tables the plain-SQL sweep reads and writes, copied from ours before either sweeps."""


@dataclass
class Store:
    """A fresh, initialised store of one engine, and how to reach it without the library."""

    engine: str
    url: str
    admin: str = ""
    schema: str = ""
    path: Path | None = None

    @classmethod
    def create(cls, engine: str, admin: str) -> Store:
        if engine == "sqlite":
            folder = Path(tempfile.mkdtemp(prefix="rl_bench_", dir="/tmp"))
            path = folder / "ledger.sqlite3"
            store = cls(engine, f"sqlite:///{path}", path=path)
        else:
            schema = f"rl_bench_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            store = cls(engine, f"{admin}?schema={schema}", admin=admin, schema=schema)
        init_store(Settings(database_url=store.url))
        return store

    def drop(self) -> None:
        if self.engine == "sqlite" and self.path is not None:
            shutil.rmtree(self.path.parent, ignore_errors=True)
        elif self.schema:
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
                conn.execute(f"DROP SCHEMA IF EXISTS {self.schema}_sql CASCADE")

    def folder(self) -> Path:
        """The SQLite store's own temporary folder (only a SQLite store has one)."""
        if self.path is None:
            raise SystemExit(f"{self.describe()} has no folder")
        return self.path.parent

    def table(self, name: str) -> str:
        return f'"{self.schema}".{name}' if self.engine == "postgres" else name

    @contextlib.contextmanager
    def raw(self) -> Iterator[Any]:
        """A plain driver connection to the same database (psycopg or sqlite3)."""
        if self.engine == "postgres":
            with psycopg.connect(self.admin) as conn:
                yield conn
        else:
            db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30)
            try:
                yield db
            finally:
                db.close()

    def describe(self) -> str:
        if self.engine == "postgres":
            return f"PostgreSQL schema {self.schema} ({self.admin})"
        return f"SQLite file {self.path}"


def make_registry() -> Registry:
    """One module whose revert gives everything back at once."""
    registry = Registry()
    registry.module(MODULE).action(ACTION, perform=names, revert=revert_all)
    return registry


def settings_for(store: Store, args: argparse.Namespace) -> Settings:
    given: dict[str, Any] = {"database_url": store.url}
    if args.run_batch:
        given["cleanup_run_batch"] = args.run_batch
    if args.groups_per_run:
        given["cleanup_groups_per_run"] = args.groups_per_run
    if getattr(args, "lanes", 0):
        given["cleanup_lanes"] = args.lanes
    return Settings(**given)


def names(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
    """A perform that names the creatures its step's params list."""
    return {"ok": True, "resources": [{"kind": "creature", "ref": r} for r in params["refs"]]}


def ledger_runs(rl: Runledger, runs: int, entries: int, per_step: int, tag: str) -> list[Any]:
    """Runs through the application: started from a spec of one manual phase whose steps each
    name ``per_step`` creatures, dispatched, then completed by a person. Answers the run ids."""
    ids = []
    for i in range(runs):
        steps = [
            {
                "id": f"step-{step}",
                "action": ACTION,
                "params": {
                    "refs": [f"{tag}-{i}-{step}-{j}" for j in range(min(per_step, entries - start))]
                },
            }
            for step, start in enumerate(range(0, entries, per_step))
        ]
        phase = {"id": "p", "advance": "manual", "steps": steps}
        ids.append(rl.runs.start({"name": f"{tag}-{i}", "phases": [phase]}))
    while rl.runs.advance_leg("bench").dispatched:
        pass
    for run in ids:
        rl.runs.advance(run, "bench")
    rl.projector.catch_up()
    return ids


def sweep_until_done(rl: Runledger, worker: str = "bench") -> int:
    """Sweep until a pass finds no candidate; answers how many passes ran (the last is empty)."""
    passes = 0
    while True:
        passes += 1
        if not rl.cleanup.sweep(worker):
            return passes


def count_status(store: Store, status: str) -> int:
    mark = "%s" if store.engine == "postgres" else "?"
    with store.raw() as conn:
        row = conn.execute(
            f"SELECT COUNT(*) FROM {store.table('rl_resources')} WHERE status = {mark}", [status]
        ).fetchone()
    return int(row[0])


def revert_all(**_: Any) -> Any:
    """The instant module's revert: everything it is given is given back."""
    return {"ok": True}


def plain_copy(store: Store) -> Sql:
    """Tables for the plain-SQL sweep beside ours (a schema, or a file), holding a copy of our
    runs, entries and log; then both stores' statistics made alike (PostgreSQL: VACUUM ANALYZE
    of each, so neither carries dead rows the other lacks; SQLite: neither analysed, as
    runledger leaves it)."""
    if store.engine == "postgres":
        schema = f"{store.schema}_sql"
        with psycopg.connect(store.admin, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        sql = Sql.postgres(store.admin, schema)
        sql.create()
        with sql.write() as db:
            for table in COPIED:
                names = ", ".join(store_columns(store, table))
                db.execute(
                    f"INSERT INTO {sql.table(table)} ({names}) "
                    f"SELECT {names} FROM {store.table(table)}"
                )
            log = sql.table("rl_run_log")
            db.execute(
                f"SELECT setval(pg_get_serial_sequence('{log}', 'position'), "
                f"(SELECT COALESCE(MAX(position), 0) + 1 FROM {log}))"
            )
        for table in COPIED:
            sql.conn.execute(f"VACUUM ANALYZE {store.table(table)}")
            sql.conn.execute(f"VACUUM ANALYZE {sql.table(table)}")
        return sql
    sql = Sql.sqlite(str(store.folder() / "plain.sqlite3"))
    sql.create()
    sql.conn.execute("ATTACH DATABASE ? AS ours", [str(store.path)])
    with sql.write() as db:
        for table in COPIED:
            names = ", ".join(store_columns(store, table))
            db.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM ours.{table}")
    sql.conn.execute("DETACH DATABASE ours")
    return sql


def store_columns(store: Store, table: str) -> list[str]:
    with store.raw() as conn:
        cursor = conn.execute(f"SELECT * FROM {store.table(table)} LIMIT 0")
        return [d[0] for d in cursor.description]


def plain_count(sql: Sql, status: str) -> int:
    rows = sql.read("SELECT COUNT(*) AS n FROM {rl_resources} WHERE status = %s", [status])
    return int(rows[0]["n"])


def log_lines(conn: Any, table: str, mark: str) -> list[tuple[str, str, str]]:
    """A run log's cleanup lines (run, kind, detail) in a stable order, positions left out."""
    rows = conn.execute(
        f"SELECT run_id, kind, detail FROM {table} WHERE kind LIKE {mark}", ["cleanup.%"]
    ).fetchall()
    plain = [list(r.values()) if isinstance(r, dict) else list(r) for r in rows]
    return sorted((str(r[0]), str(r[1]), str(r[2])) for r in plain)

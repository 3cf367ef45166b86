"""The sandbox world's SQLite file: its tables, one write transaction, and the reads and writes
every part of the world shares."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS things (ref TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "key TEXT NOT NULL, until REAL)",
    "CREATE TABLE IF NOT EXISTS props (target TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS faults (scope TEXT NOT NULL, knob TEXT NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (scope, knob))",
    "CREATE TABLE IF NOT EXISTS calls (op TEXT NOT NULL, key TEXT NOT NULL, "
    "count INTEGER NOT NULL, PRIMARY KEY (op, key))",
    "CREATE TABLE IF NOT EXISTS epoch (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER)",
    "INSERT OR IGNORE INTO epoch VALUES (1, 0)",
    # Keys a revert or a restore has ended: nothing is made or applied under them again.
    "CREATE TABLE IF NOT EXISTS fences (key TEXT PRIMARY KEY)",
    # What the first apply under a key found and set, JSON each: a repeat answers this.
    "CREATE TABLE IF NOT EXISTS applied (key TEXT PRIMARY KEY, target TEXT NOT NULL, "
    "baseline TEXT NOT NULL, applied TEXT NOT NULL)",
]
DEFAULTS = {"weather": "clear", "spawn_rate": 1.0}


@contextmanager
def transaction(path: Path) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction: it holds the file's write lock from its first
    statement, so what it reads cannot change before it writes."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        yield db
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    finally:
        db.close()


def create(path: Path) -> None:
    with transaction(path) as db:
        for statement in SCHEMA:
            db.execute(statement)


def count(db: sqlite3.Connection, op: str, key: str) -> None:
    db.execute(
        "INSERT INTO calls VALUES (?, ?, 1) ON CONFLICT (op, key) DO UPDATE SET count = count + 1",
        (op, key),
    )


def prop(db: sqlite3.Connection, target: str) -> Any:
    row = db.execute("SELECT value FROM props WHERE target = ?", (target,)).fetchone()
    return json.loads(row[0]) if row else DEFAULTS.get(target.partition(":")[0])


def set_prop(db: sqlite3.Connection, target: str, value: Any) -> None:
    db.execute("INSERT OR REPLACE INTO props VALUES (?, ?)", (target, json.dumps(value)))


def fenced(db: sqlite3.Connection, key: str) -> bool:
    return db.execute("SELECT 1 FROM fences WHERE key = ?", (key,)).fetchone() is not None


def fence(db: sqlite3.Connection, key: str) -> None:
    db.execute("INSERT OR IGNORE INTO fences VALUES (?)", (key,))


def given_back(key: str, what: str = "made") -> dict[str, Any]:
    """The answer under a key a revert or a restore has ended."""
    return {
        "ok": False,
        "retry": False,
        "error": f"{key} was given back; nothing is {what} under it",
    }

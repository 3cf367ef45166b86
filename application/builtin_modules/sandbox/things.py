"""What the sandbox makes under a key: spawned creatures and zones with a deadline; and how a
revert, a vanishing or the world's own clock takes them away again."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from runledger.application.builtin_modules.sandbox.store import fence


def listed(db: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    rows = db.execute("SELECT ref, kind, key, until FROM things ORDER BY ref").fetchall()
    return {r[0]: {"kind": r[1], "key": r[2], "until": r[3]} for r in rows}


def spawn(db: sqlite3.Connection, params: dict[str, Any], key: str) -> Any:
    kind = str(params.get("kind", "creature"))
    tag = hashlib.sha1(key.encode()).hexdigest()[:8]
    refs = [f"{kind}-{tag}-{i}" for i in range(int(params.get("count", 1)))]
    for ref in refs:
        db.execute("INSERT OR IGNORE INTO things VALUES (?, ?, ?, NULL)", (ref, kind, key))
    return {"ok": True, "resources": [{"kind": kind, "ref": ref} for ref in refs]}


def open_zone(
    db: sqlite3.Connection, params: dict[str, Any], key: str, clock: Callable[[], datetime]
) -> Any:
    """A zone open already keeps its deadline: opening it again adopts that one."""
    name = str(params.get("name", "zone"))
    row = db.execute("SELECT until FROM things WHERE ref = ?", (name,)).fetchone()
    if row is None:
        until = clock() + timedelta(seconds=float(params.get("duration_s", 60)))
        db.execute("INSERT INTO things VALUES (?, 'zone', ?, ?)", (name, key, until.timestamp()))
    else:
        until = datetime.fromtimestamp(row[0], UTC)
    return {
        "ok": True,
        "resources": [{"kind": "zone", "ref": name, "until": until.isoformat()}],
    }


def give_back(db: sqlite3.Connection, refs: list[str], key: str, fail_refs: frozenset[str]) -> Any:
    """Removes ``refs`` but those ``fail_refs`` holds, and ends ``key`` in the same transaction."""
    fence(db, key)
    if not refs:  # a placeholder: give back whatever this key made
        db.execute("DELETE FROM things WHERE key = ?", (key,))
    for ref in refs:
        if ref not in fail_refs:
            db.execute("DELETE FROM things WHERE ref = ?", (ref,))
    failed = sorted(fail_refs & set(refs))
    return {"ok": True, "failed": failed} if failed else {"ok": True}


def vanish(db: sqlite3.Connection, ref: str) -> bool:
    return db.execute("DELETE FROM things WHERE ref = ?", (ref,)).rowcount > 0


def erase_due(db: sqlite3.Connection, now: datetime) -> list[tuple[str, str]]:
    """Removes what has reached its deadline by ``now``; answers (kind, ref) of each."""
    at = now.timestamp()
    due = db.execute(
        "SELECT kind, ref FROM things WHERE until IS NOT NULL AND until <= ?", (at,)
    ).fetchall()
    db.execute("DELETE FROM things WHERE until IS NOT NULL AND until <= ?", (at,))
    return [(k, r) for k, r in due]

"""The sandbox world: a small, deterministic game world with fault knobs, for demos and tests.

Its state lives in its own SQLite file, apart from the ledger, so a runner process, the CLI and
a test can all look at (and break) the same world.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
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
]
KNOBS = ("fail_perform", "fail_revert", "terminal", "hang", "throw", "garbage", "fail_refs")
DEFAULTS = {"weather": "clear", "spawn_rate": 1.0}


class SandboxWorld:
    """The world itself, and every fault a test or a person can inject into it."""

    def __init__(self, path: Path, clock: Callable[[], datetime] | None = None) -> None:
        self.path = path
        self.clock = clock or (lambda: datetime.now(UTC))
        with self._db() as db:
            for statement in SCHEMA:
                db.execute(statement)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    # -- what people and tests do to the world ------------------------------------------------

    def set_fault(self, scope: str, knob: str, value: Any = True) -> None:
        if knob not in KNOBS:
            raise ValueError(f"unknown fault {knob!r}; knobs are {', '.join(KNOBS)}")
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO faults VALUES (?, ?, ?)", (scope, knob, json.dumps(value))
            )

    def clear_faults(self) -> None:
        with self._db() as db:
            db.execute("DELETE FROM faults")

    def set_value(self, target: str, value: Any) -> None:
        """Somebody else changes a world property (a game master, another system)."""
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO props VALUES (?, ?)", (target, json.dumps(value)))

    def value(self, target: str) -> Any:
        with self._db() as db:
            row = db.execute("SELECT value FROM props WHERE target = ?", (target,)).fetchone()
        return json.loads(row[0]) if row else DEFAULTS.get(target.partition(":")[0])

    def vanish(self, ref: str) -> bool:
        """The thing disappears without anyone telling core (a crash, a wipe)."""
        with self._db() as db:
            return db.execute("DELETE FROM things WHERE ref = ?", (ref,)).rowcount > 0

    def restart(self) -> None:
        """The game server restarts; the module sees its own reconnect."""
        with self._db() as db:
            db.execute("UPDATE epoch SET n = n + 1")

    def epoch(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT n FROM epoch").fetchone()[0])

    def things(self) -> dict[str, dict[str, Any]]:
        with self._db() as db:
            rows = db.execute("SELECT ref, kind, key, until FROM things ORDER BY ref").fetchall()
        return {r[0]: {"kind": r[1], "key": r[2], "until": r[3]} for r in rows}

    def calls(self, op: str) -> dict[str, int]:
        with self._db() as db:
            rows = db.execute("SELECT key, count FROM calls WHERE op = ?", (op,)).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def erase_due(self) -> list[tuple[str, str]]:
        """The world ends what has reached its deadline; answers (kind, ref) of each."""
        now = self.clock().timestamp()
        with self._db() as db:
            due = db.execute(
                "SELECT kind, ref FROM things WHERE until IS NOT NULL AND until <= ?", (now,)
            ).fetchall()
            db.execute("DELETE FROM things WHERE until IS NOT NULL AND until <= ?", (now,))
        return [(k, r) for k, r in due]

    # -- the module's side -------------------------------------------------------------------

    def _count(self, db: sqlite3.Connection, op: str, key: str) -> None:
        db.execute(
            "INSERT INTO calls VALUES (?, ?, 1) ON CONFLICT (op, key) "
            "DO UPDATE SET count = count + 1",
            (op, key),
        )

    def _fault(self, db: sqlite3.Connection, scopes: list[str], knob: str) -> Any:
        for scope in scopes:
            row = db.execute(
                "SELECT value FROM faults WHERE scope = ? AND knob = ?", (scope, knob)
            ).fetchone()
            if row:
                return json.loads(row[0])
        return None

    def _spend(self, db: sqlite3.Connection, scopes: list[str], knob: str) -> bool:
        """A counted fault: true while it has failures left, one fewer each time."""
        for scope in scopes:
            row = db.execute(
                "SELECT value FROM faults WHERE scope = ? AND knob = ?", (scope, knob)
            ).fetchone()
            if row and int(json.loads(row[0])) > 0:
                db.execute(
                    "UPDATE faults SET value = ? WHERE scope = ? AND knob = ?",
                    (json.dumps(int(json.loads(row[0])) - 1), scope, knob),
                )
                return True
        return False

    def perform(self, action: str, params: dict[str, Any], key: str) -> Any:
        with self._db() as db:
            self._count(db, f"perform:{action}", key)
            hang = self._fault(db, [action], "hang")
            failing = self._spend(db, [action], "fail_perform")
        if hang:
            time.sleep(float(hang))
        if failing:
            return {"ok": False, "error": f"sandbox: {action} failed (injected)"}
        if action == "sandbox.zone":
            return self._open_zone(params, key)
        return self._spawn(params, key)

    def _spawn(self, params: dict[str, Any], key: str) -> Any:
        kind = str(params.get("kind", "creature"))
        tag = hashlib.sha1(key.encode()).hexdigest()[:8]
        refs = [f"{kind}-{tag}-{i}" for i in range(int(params.get("count", 1)))]
        with self._db() as db:
            for ref in refs:
                db.execute("INSERT OR IGNORE INTO things VALUES (?, ?, ?, NULL)", (ref, kind, key))
        return {"ok": True, "resources": [{"kind": kind, "ref": ref} for ref in refs]}

    def _open_zone(self, params: dict[str, Any], key: str) -> Any:
        name = str(params.get("name", "zone"))
        with self._db() as db:
            row = db.execute("SELECT until FROM things WHERE ref = ?", (name,)).fetchone()
            if row is None:
                until = self.clock() + timedelta(seconds=float(params.get("duration_s", 60)))
                db.execute(
                    "INSERT INTO things VALUES (?, 'zone', ?, ?)", (name, key, until.timestamp())
                )
            else:
                until = datetime.fromtimestamp(row[0], UTC)
        return {
            "ok": True,
            "resources": [{"kind": "zone", "ref": name, "until": until.isoformat()}],
        }

    def revert(self, action: str, resources: list[dict[str, Any]], key: str) -> Any:
        refs = [r["ref"] for r in resources]
        scopes = [action, *refs]
        with self._db() as db:
            self._count(db, f"revert:{action}", key)
            hang = self._fault(db, scopes, "hang")
            throw = self._fault(db, scopes, "throw")
            garbage = self._fault(db, scopes, "garbage")
            terminal = self._fault(db, scopes, "terminal")
            failing = self._spend(db, scopes, "fail_revert")
            fail_refs = set(self._fault(db, [action], "fail_refs") or [])
        if hang:
            time.sleep(float(hang))
        if throw:
            raise RuntimeError("sandbox: the shard dropped the connection (injected)")
        if garbage:
            return "garbage"
        if terminal:
            return {"ok": False, "retry": False, "error": f"sandbox: {action} refuses (injected)"}
        if failing:
            return {"ok": False, "error": f"sandbox: {action} could not reach the shard"}
        with self._db() as db:
            if not refs:  # a placeholder: give back whatever this key made
                db.execute("DELETE FROM things WHERE key = ?", (key,))
            for ref in refs:
                if ref not in fail_refs:
                    db.execute("DELETE FROM things WHERE ref = ?", (ref,))
        failed = sorted(fail_refs & set(refs))
        return {"ok": True, "failed": failed} if failed else {"ok": True}

    def zone_is_open(self, name: str) -> bool:
        """Read without a write lock or a transaction that could change the file: a dry run's
        check asks it."""
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        try:
            row = db.execute("SELECT 1 FROM things WHERE ref = ? AND kind = 'zone'", (name,))
            return row.fetchone() is not None
        finally:
            db.close()

    def in_force(self, resources: list[dict[str, Any]]) -> Any:
        present = self.things()
        return {"ok": True, "in_force": [r["ref"] for r in resources if r["ref"] in present]}

    def apply(self, lease: str, target: str, value: Any) -> Any:
        name = f"{lease.rpartition('.')[2]}:{target}"
        baseline = self.value(name)
        self.set_value(name, value)
        return {"ok": True, "baseline": baseline, "applied": value}

    def restore(self, lease: str, baseline: Any, expected: Any, target: str) -> Any:
        name = f"{lease.rpartition('.')[2]}:{target}"
        with self._db() as db:
            self._count(db, f"restore:{lease}", target)
            row = db.execute("SELECT value FROM props WHERE target = ?", (name,)).fetchone()
            current = json.loads(row[0]) if row else DEFAULTS.get(name.partition(":")[0])
            if current == baseline and current != expected:
                return {"ok": True}  # restored before: a repeat after a crash finds it done
            if current != expected:
                return {"drifted": True, "current": current}
            db.execute("INSERT OR REPLACE INTO props VALUES (?, ?)", (name, json.dumps(baseline)))
        return {"ok": True}

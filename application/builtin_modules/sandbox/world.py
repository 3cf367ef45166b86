"""The sandbox world: a small, deterministic game world with fault knobs, for demos and tests.

Its state lives in its own SQLite file, apart from the ledger, so a runner process, the CLI and
a test can all look at (and break) the same world.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runledger.application.builtin_modules.sandbox import leases
from runledger.application.builtin_modules.sandbox.store import (
    count,
    create,
    fence,
    fenced,
    given_back,
    prop,
    set_prop,
    transaction,
)

KNOBS = ("fail_perform", "fail_revert", "terminal", "hang", "throw", "garbage", "fail_refs")


class SandboxWorld:
    """The world itself, and every fault a test or a person can inject into it."""

    def __init__(self, path: Path, clock: Callable[[], datetime] | None = None) -> None:
        self.path = path
        self.clock = clock or (lambda: datetime.now(UTC))
        create(path)

    def _db(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self.path)

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
            set_prop(db, target, value)

    def value(self, target: str) -> Any:
        with self._db() as db:
            return prop(db, target)

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
        """How often each key (each target, for ``restore:<lease>``) was called with ``op``:
        ``perform:<action>``, ``revert:<action>``, ``apply:<lease>``, ``restore:<lease>``."""
        with self._db() as db:
            rows = db.execute("SELECT key, count FROM calls WHERE op = ?", (op,)).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def fenced(self, key: str) -> bool:
        """Whether a revert or a restore has ended ``key``: nothing is made under it again."""
        with self._db() as db:
            return fenced(db, key)

    def applied_under(self, key: str) -> dict[str, Any] | None:
        """What the first apply under ``key`` recorded: ``{target, baseline, applied}``, with
        the world's property name as target (``weather:north``)."""
        with self._db() as db:
            return leases.applied_under(db, key)

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
        """Make what the params ask under ``key``, once; nothing under a key given back.

        The call is counted and its injected hang slept first; checking the fence and making
        are then one transaction, so a revert that came while this call hung wins.
        """
        with self._db() as db:
            count(db, f"perform:{action}", key)
            hang = self._fault(db, [action], "hang")
            failing = self._spend(db, [action], "fail_perform")
        if hang:
            time.sleep(float(hang))
        if failing:
            return {"ok": False, "error": f"sandbox: {action} failed (injected)"}
        with self._db() as db:
            if fenced(db, key):
                return given_back(key)
            if action == "sandbox.zone":
                return self._open_zone(db, params, key)
            return self._spawn(db, params, key)

    def _spawn(self, db: sqlite3.Connection, params: dict[str, Any], key: str) -> Any:
        kind = str(params.get("kind", "creature"))
        tag = hashlib.sha1(key.encode()).hexdigest()[:8]
        refs = [f"{kind}-{tag}-{i}" for i in range(int(params.get("count", 1)))]
        for ref in refs:
            db.execute("INSERT OR IGNORE INTO things VALUES (?, ?, ?, NULL)", (ref, kind, key))
        return {"ok": True, "resources": [{"kind": kind, "ref": ref} for ref in refs]}

    def _open_zone(self, db: sqlite3.Connection, params: dict[str, Any], key: str) -> Any:
        name = str(params.get("name", "zone"))
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
        """Give back the listed things, or with none whatever ``key`` made, and end the key in
        the same transaction."""
        refs = [r["ref"] for r in resources]
        scopes = [action, *refs]
        with self._db() as db:
            count(db, f"revert:{action}", key)
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
            fence(db, key)
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

    def apply(self, lease: str, target: str, value: Any, key: str) -> Any:
        """A ``hang`` fault on the lease (``sandbox fault sandbox.weather hang 5``) holds the
        answer back after the value is set: an apply that takes effect and answers late."""
        with self._db() as db:
            answer = leases.apply(db, lease, target, value, key)
            hang = self._fault(db, [lease], "hang")
        if hang:
            time.sleep(float(hang))
        return answer

    def restore(self, lease: str, baseline: Any, expected: Any, target: str, key: str) -> Any:
        with self._db() as db:
            return leases.restore(db, lease, target, baseline, expected, key)

"""The sandbox's fault knobs: what a test or a person injects, by scope (an action, a lease, a
thing's ref), and how the module's side reads and spends them inside its own transaction."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

KNOBS = ("fail_perform", "fail_revert", "terminal", "hang", "throw", "garbage", "fail_refs")


def set_fault(db: sqlite3.Connection, scope: str, knob: str, value: Any) -> None:
    if knob not in KNOBS:
        raise ValueError(f"unknown fault {knob!r}; knobs are {', '.join(KNOBS)}")
    db.execute("INSERT OR REPLACE INTO faults VALUES (?, ?, ?)", (scope, knob, json.dumps(value)))


def clear_faults(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM faults")


def fault(db: sqlite3.Connection, scopes: list[str], knob: str) -> Any:
    """The knob's value at the first of ``scopes`` that sets it."""
    for scope in scopes:
        row = db.execute(
            "SELECT value FROM faults WHERE scope = ? AND knob = ?", (scope, knob)
        ).fetchone()
        if row:
            return json.loads(row[0])
    return None


def spend(db: sqlite3.Connection, scopes: list[str], knob: str) -> bool:
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


@dataclass(frozen=True)
class RevertFaults:
    """Every knob a revert obeys, read (and a counted failure spent) in one transaction."""

    hang: Any
    throw: Any
    garbage: Any
    terminal: Any
    failing: bool
    fail_refs: frozenset[str]

    @classmethod
    def read(cls, db: sqlite3.Connection, action: str, refs: list[str]) -> RevertFaults:
        scopes = [action, *refs]
        return cls(
            hang=fault(db, scopes, "hang"),
            throw=fault(db, scopes, "throw"),
            garbage=fault(db, scopes, "garbage"),
            terminal=fault(db, scopes, "terminal"),
            failing=spend(db, scopes, "fail_revert"),
            fail_refs=frozenset(fault(db, [action], "fail_refs") or []),
        )

    def answer(self, action: str) -> Any:
        """What the injected faults make the revert answer (after its hang is slept), or None
        when none of them stops it."""
        if self.hang:
            time.sleep(float(self.hang))
        if self.throw:
            raise RuntimeError("sandbox: the shard dropped the connection (injected)")
        if self.garbage:
            return "garbage"
        if self.terminal:
            return {"ok": False, "retry": False, "error": f"sandbox: {action} refuses (injected)"}
        if self.failing:
            return {"ok": False, "error": f"sandbox: {action} could not reach the shard"}
        return None

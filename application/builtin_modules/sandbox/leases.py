"""The sandbox's leases, keyed: each apply and each restore is one transaction of the world's
file, so a repeated apply, a restore and a late apply under one key cannot interleave."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from runledger.application.builtin_modules.sandbox.store import (
    count,
    fence,
    fenced,
    given_back,
    prop,
    set_prop,
)


def prop_name(lease: str, target: str) -> str:
    """The world property a lease's target names: sandbox.weather's north is weather:north."""
    return f"{lease.rpartition('.')[2]}:{target}"


def same(one: Any, other: Any) -> bool:
    """Equal as the world stores them: 1 and 1.0, or True and 1, are different values."""
    return json.dumps(one, sort_keys=True) == json.dumps(other, sort_keys=True)


def applied_under(db: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    row = db.execute(
        "SELECT target, baseline, applied FROM applied WHERE key = ?", (key,)
    ).fetchone()
    if row is None:
        return None
    return {"target": row[0], "baseline": json.loads(row[1]), "applied": json.loads(row[2])}


def apply(db: sqlite3.Connection, lease: str, target: str, value: Any, key: str) -> Any:
    """The first apply under a key sets the value and records what it found; a repeat answers
    that record and changes nothing; a key a restore has ended applies nothing."""
    count(db, f"apply:{lease}", key)
    if fenced(db, key):
        return given_back(key, "applied")
    first = applied_under(db, key)
    if first is None:
        name = prop_name(lease, target)
        first = {"target": name, "baseline": prop(db, name), "applied": value}
        db.execute(
            "INSERT INTO applied VALUES (?, ?, ?, ?)",
            (key, name, json.dumps(first["baseline"]), json.dumps(value)),
        )
        set_prop(db, name, value)
    return {"ok": True, "baseline": first["baseline"], "applied": first["applied"]}


def restore(
    db: sqlite3.Connection, lease: str, target: str, baseline: Any, expected: Any, key: str
) -> Any:
    """Put back what was found, if what this key set is still there; ends the key either way.

    What the world recorded under the key wins over the arguments. With nothing recorded and
    nothing expected (an apply whose answer never came, and which never ran), there is nothing
    to put back.
    """
    count(db, f"restore:{lease}", target)
    fence(db, key)
    name = prop_name(lease, target)
    first = applied_under(db, key)
    if first is not None:
        name, baseline, expected = first["target"], first["baseline"], first["applied"]
    elif expected is None:
        return {"ok": True}
    current = prop(db, name)
    if same(current, expected):
        set_prop(db, name, baseline)
        return {"ok": True}
    if same(current, baseline):
        return {"ok": True}  # restored before: a repeat after a crash finds it done
    return {"drifted": True, "current": current}

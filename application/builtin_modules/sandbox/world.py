"""The sandbox world: a small, deterministic game world with fault knobs, for demos and tests.

Its state lives in its own SQLite file, apart from the ledger, so a runner process, the CLI and
a test can all look at (and break) the same world.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runledger.application.builtin_modules.sandbox import faults, leases, things
from runledger.application.builtin_modules.sandbox.faults import KNOBS, RevertFaults
from runledger.application.builtin_modules.sandbox.store import (
    count,
    create,
    fenced,
    given_back,
    prop,
    set_prop,
    transaction,
)

__all__ = ["KNOBS", "SandboxWorld"]


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
        with self._db() as db:
            faults.set_fault(db, scope, knob, value)

    def clear_faults(self) -> None:
        with self._db() as db:
            faults.clear_faults(db)

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
            return things.vanish(db, ref)

    def restart(self) -> None:
        """The game server restarts; the module sees its own reconnect."""
        with self._db() as db:
            db.execute("UPDATE epoch SET n = n + 1")

    def epoch(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT n FROM epoch").fetchone()[0])

    def things(self) -> dict[str, dict[str, Any]]:
        with self._db() as db:
            return things.listed(db)

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
        now = self.clock()
        with self._db() as db:
            return things.erase_due(db, now)

    # -- the module's side -------------------------------------------------------------------

    def perform(self, action: str, params: dict[str, Any], key: str) -> Any:
        """Make what the params ask under ``key``, once; nothing under a key given back.

        The call is counted and its injected hang slept first; checking the fence and making
        are then one transaction, so a revert that came while this call hung wins.
        """
        with self._db() as db:
            count(db, f"perform:{action}", key)
            hang = faults.fault(db, [action], "hang")
            failing = faults.spend(db, [action], "fail_perform")
        if hang:
            time.sleep(float(hang))
        if failing:
            return {"ok": False, "error": f"sandbox: {action} failed (injected)"}
        with self._db() as db:
            if fenced(db, key):
                return given_back(key)
            if action == "sandbox.zone":
                return things.open_zone(db, params, key, self.clock)
            return things.spawn(db, params, key)

    def revert(self, action: str, resources: list[dict[str, Any]], key: str) -> Any:
        """Give back the listed things, or with none whatever ``key`` made, and end the key in
        the same transaction."""
        refs = [r["ref"] for r in resources]
        with self._db() as db:
            count(db, f"revert:{action}", key)
            injected = RevertFaults.read(db, action, refs)
        stopped = injected.answer(action)
        if stopped is not None:
            return stopped
        with self._db() as db:
            return things.give_back(db, refs, key, injected.fail_refs)

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
            hang = faults.fault(db, [lease], "hang")
        if hang:
            time.sleep(float(hang))
        return answer

    def restore(self, lease: str, baseline: Any, expected: Any, target: str, key: str) -> Any:
        with self._db() as db:
            return leases.restore(db, lease, target, baseline, expected, key)

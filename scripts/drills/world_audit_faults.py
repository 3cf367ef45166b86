"""The world-audit drill's weather: the sandbox's own fault knobs, opened and closed in windows,
stalls of the whole world, and a game master who changes targets under running leases."""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import redis

from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from scripts.drills.world_audit_check import Target, reading

BUDGET_S = 1.5  # every module call's; a claim lasts it and the claim slack more
LEASE_BUDGET_S = 2.0  # core.lease's bound on an apply (the runners' --budget-ms)
HANG_S = (0.5, 3.0)  # a hanging call answers this long after its deadline
STALL_S = (2.5, 4.0)  # longer than core.lease's bound on an apply (2 s)
SCOPES = ["sandbox.spawn", "sandbox.spawn", "sandbox.zone"]
LEASES = ["sandbox.weather", "sandbox.spawn_rate"]  # only a hang reaches an apply
KNOBS = {"hang": 35, "fail_perform": 15, "fail_revert": 15, "garbage": 8, "throw": 8}
KNOBS |= {"terminal": 4, "stall": 15}
CLEARED = {"hang": 0, "fail_perform": 0, "fail_revert": 0}  # the rest are cleared by False


@dataclass
class Faults:
    path: Path
    rng: random.Random
    windows: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    opened: Counter[str] = field(default_factory=Counter)
    stalled_until: float = 0.0
    late_calls: int = 0  # calls made while a hang held them past their deadline

    @property
    def world(self) -> SandboxWorld:
        return SandboxWorld(self.path)

    def stalled(self) -> bool:
        """While the world stalls, the drill's own writes to it would wait too."""
        return time.monotonic() < self.stalled_until

    def open(self, now: float) -> str | None:
        """A fault for a few seconds; answers the action a hang was just put on, if one was."""
        knob = self.rng.choices(list(KNOBS), weights=list(KNOBS.values()))[0]
        scope = self.rng.choice(SCOPES)
        if knob == "hang" and self.rng.random() < 0.3:
            scope = self.rng.choice(LEASES)
        if not self.opened:  # the first is a hang, so no drill goes without late answers
            knob, scope = "hang", SCOPES[0]
        if knob == "stall":
            seconds = self.rng.uniform(*STALL_S)
            threading.Thread(target=stall, args=(self.path, seconds), daemon=True).start()
            self.stalled_until = time.monotonic() + seconds
            self.opened[knob] += 1
            return None
        if (scope, knob) in self.windows:
            return None
        value: Any = True
        if knob == "hang":
            bound = LEASE_BUDGET_S if scope in LEASES else BUDGET_S
            value = round(bound + self.rng.uniform(*HANG_S), 2)
        elif knob.startswith("fail_"):
            value = self.rng.randint(1, 3)
        calls = self._calls(scope)
        self.world.set_fault(scope, knob, value)
        seconds = self.rng.uniform(2, 6) if self.opened else 6.0  # long enough to catch calls
        self.windows[scope, knob] = (now + seconds, calls)
        self.opened[knob] += 1
        return scope if knob == "hang" else None

    def close(self, now: float) -> None:
        for (scope, knob), (closes, calls) in list(self.windows.items()):
            if closes <= now:
                self.world.set_fault(scope, knob, CLEARED.get(knob, False))
                if knob == "hang":
                    self.late_calls += self._calls(scope) - calls
                del self.windows[scope, knob]

    def clear(self) -> None:
        while self.stalled():
            time.sleep(0.1)
        self.close(float("inf"))
        self.world.clear_faults()

    def _calls(self, scope: str) -> int:
        with reading(self.path) as db:
            ops = (f"perform:{scope}", f"revert:{scope}", f"apply:{scope}")
            row = db.execute("SELECT SUM(count) FROM calls WHERE op IN (?, ?, ?)", ops).fetchone()
        return int(row[0] or 0)


def stall(path: Path, seconds: float) -> None:
    """The world's shard stalls: its write lock is held, so every call waits past its budget
    (an apply too, which no knob reaches)."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        time.sleep(seconds)
        db.execute("COMMIT")
    finally:
        db.close()


@dataclass
class GameMaster:
    """Somebody else, changing a target while a run holds it: from then on, that is the value
    the target's owner expects back."""

    path: Path
    client: redis.Redis
    targets: list[Target]
    rng: random.Random
    owners: dict[str, Any] = field(default_factory=dict)
    changes: int = 0

    def __post_init__(self) -> None:
        self.owners = {t.ref: t.before for t in self.targets}

    def set_before(self) -> None:
        for t in self.targets:
            self._set(t, t.before)

    def values(self) -> dict[str, Any]:
        """Each target's value now, read straight from the world."""
        with reading(self.path) as db:
            props = dict(db.execute("SELECT target, value FROM props").fetchall())
        values = {t.ref: self.client.get(t.target) for t in self.targets if _redis(t)}
        for t in self.targets:
            if not _redis(t):
                values[t.ref] = json.loads(props[t.prop]) if t.prop in props else None
        return values

    def change(self, holders: dict[str, UUID], running: Iterable[UUID]) -> None:
        """``holders``: each run's own lease value (as repr) -> the run."""
        live, values = set(running), self.values()
        held = [t for t in self.targets if holders.get(repr(values[t.ref])) in live]
        if not held:
            return
        target = self.rng.choice(held)
        self.changes += 1
        value: Any = f"gm-{self.changes}"
        if target.lease == "sandbox.spawn_rate":
            value = 50.0 + self.changes
        self._set(target, value)
        self.owners[target.ref] = value

    def _set(self, target: Target, value: Any) -> None:
        if _redis(target):
            self.client.set(target.target, value)
        else:
            SandboxWorld(self.path).set_value(target.prop, value)


def _redis(target: Target) -> bool:
    return target.lease.startswith("redis.")

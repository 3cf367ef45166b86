"""A game for runs to play in: a module whose performs make things, whose reverts take them back,
and whose one lease overrides a value per target. Tests read the world, not only the ledger.

Run as ``python -m tests.support.game race ...`` from the project root, it is also a worker process
that
races another for lease targets through core.lease (see ``race``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from freezegun.api import FrozenDateTimeFactory

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings

MODULE = "game"
LEASE = "weather"
SPAWN = "game.spawn"
START = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
# Tests whose subject is not the back-off retry at once; those about it set their own delays.
NO_BACKOFF: dict[str, Any] = {"retry_delays_s": (0.0,)}

Answer = Callable[[dict[str, Any], str], Any]
"""A scripted perform: given the step's params and its idempotency key, answers (or raises)."""


@dataclass
class Clock:
    """The one clock every part of a runledger reads; a test moves it. With ``frozen`` (the
    conftest's ``clock``), freezegun holds ``datetime.now`` to it as well, so a runledger on the
    default clock reads the same time as one opened on this one."""

    now: datetime = START
    frozen: FrozenDateTimeFactory | None = None

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.move_to(self.now + timedelta(seconds=seconds))

    def move_to(self, at: datetime) -> None:
        self.now = at
        if self.frozen is not None:
            self.frozen.move_to(at)


@dataclass
class Revert:
    action: str
    key: str
    refs: tuple[str, ...]


@dataclass
class Game:
    """The world. ``alive`` maps each thing a run made to the idempotency key that made it."""

    alive: dict[str, str] = field(default_factory=dict)
    performs: list[tuple[str, str]] = field(default_factory=list)
    reverts: list[Revert] = field(default_factory=list)
    scripts: dict[str, list[Answer]] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    applies: Counter[str] = field(default_factory=Counter)
    restores: list[dict[str, Any]] = field(default_factory=list)
    applied_under: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, registry: Registry, *actions: str, budget_ms: int | None = None) -> None:
        module = registry.module(MODULE)
        for action in actions:
            module.action(
                action,
                perform=self._perform(action),
                revert=self._revert(action),
                budget_ms=budget_ms,
            )
        if LEASE not in registry.leases:
            self.install_lease(registry, MODULE, LEASE)

    def install_lease(self, registry: Registry, module: str, lease_id: str) -> None:
        """One more lease over the same values, registered by ``module``."""
        registry.module(module).lease(lease_id, apply=self._apply, restore=self._restore)

    def script(self, action: str, *answers: Answer) -> None:
        """The next performs of ``action`` answer these, in turn; then it makes things again."""
        self.scripts.setdefault(action, []).extend(answers)

    def make(self, params: dict[str, Any], key: str) -> dict[str, Any]:
        refs = [f"{key}/{i}" for i in range(int(params.get("count", 1)))]
        with self.lock:
            for ref in refs:
                self.alive[ref] = key
        return {"ok": True, "resources": [{"kind": "creature", "ref": r} for r in refs]}

    def keys_performed(self, action: str) -> list[str]:
        return [key for done, key in self.performs if done == action]

    def _perform(self, action: str) -> Callable[..., Any]:
        def perform(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
            with self.lock:
                self.performs.append((action, idempotency_key))
                queued = self.scripts.get(action)
                answer = queued.pop(0) if queued else self.make
            return answer(params, idempotency_key)

        return perform

    def _revert(self, action: str) -> Callable[..., Any]:
        def revert(resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
            refs = tuple(r["ref"] for r in resources)
            with self.lock:
                self.reverts.append(Revert(action, idempotency_key, refs))
                # No resources: give back whatever was made under the key.
                gone = refs or [r for r, k in self.alive.items() if k == idempotency_key]
                for ref in gone:
                    self.alive.pop(ref, None)
            return {"ok": True}

        return revert

    def _apply(self, target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
        """MODULE_API 2.0: a repeat under one key answers the first apply; an ended key
        applies nothing."""
        with self.lock:
            self.applies[target] += 1
            if idempotency_key in self.ended:
                return {"ok": False, "retry": False, "error": "this key was given back"}
            if idempotency_key not in self.applied_under:
                baseline = self.values.get(target, "clear")
                self.values[target] = value
                self.applied_under[idempotency_key] = (baseline, value)
            baseline, applied = self.applied_under[idempotency_key]
        return {"ok": True, "baseline": baseline, "applied": applied}

    def _restore(
        self, baseline: Any, expected: Any, run_id: str, target: str, idempotency_key: str
    ) -> Any:
        """MODULE_API 2.0: what was applied under the key wins over the arguments; nothing
        applied under it is given back at once; the key is ended either way."""
        with self.lock:
            self.restores.append({"target": target, "baseline": baseline, "expected": expected})
            self.ended.add(idempotency_key)
            if idempotency_key in self.applied_under:
                baseline, expected = self.applied_under[idempotency_key]
            elif expected is None:
                return {"ok": True}
            current = self.values.get(target, "clear")
            if current == baseline and current != expected:
                return {"ok": True}
            if current != expected:
                return {"drifted": True, "current": current}
            self.values[target] = baseline
        return {"ok": True}


def throws(error: str = "the shard dropped the connection") -> Answer:
    def answer(params: dict[str, Any], key: str) -> Any:
        raise RuntimeError(error)

    return answer


def answers(value: Any) -> Answer:
    return lambda params, key: value


def hangs(seconds: float) -> Answer:
    def answer(params: dict[str, Any], key: str) -> Any:
        time.sleep(seconds)
        return {"ok": True, "resources": []}

    return answer


def step(step_id: str, action: str, **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": action, "params": params}


def lease_step(
    step_id: str, target: str, value: Any = "storm", duration_s: float = 3600
) -> dict[str, Any]:
    return step(
        step_id, "core.lease", lease=LEASE, target=target, value=value, duration_s=duration_s
    )


def phase(
    phase_id: str, *steps: dict[str, Any], advance: str = "auto", after_s: float = 0
) -> dict[str, Any]:
    return {"id": phase_id, "steps": list(steps), "advance": advance, "after_s": after_s}


def spec(*phases: dict[str, Any], name: str = "festival") -> dict[str, Any]:
    return {"name": name, "phases": list(phases)}


@contextmanager
def runledgers(url: str, registry: Registry, clock: Clock) -> Iterator[Callable[..., Runledger]]:
    """Open runledgers on one store, all reading one clock; every one is closed at the end."""
    opened: list[Runledger] = []

    def open_one(**settings: Any) -> Runledger:
        rl = bootstrap(Settings(database_url=url, **NO_BACKOFF | settings), registry, clock=clock)
        opened.append(rl)
        return rl

    try:
        yield open_one
    finally:
        for rl in opened:
            rl.close()


def race(
    url: str, run_id: str, targets: Sequence[str], applied: Path, ready: Path, go: Path
) -> list[dict[str, Any]]:
    """Bootstrap, say ready, wait for go, then ask core.lease for every target in turn for one
    run; answers what each ask answered. Every apply is one line in ``applied``."""

    def apply(target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
        fd = os.open(applied, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps({"target": target, "run": run_id}) + "\n").encode())
        finally:
            os.close(fd)
        return {"ok": True, "baseline": "clear", "applied": value}

    registry = Registry()
    registry.module(MODULE).lease(LEASE, apply=apply, restore=lambda **_: {"ok": True})
    with bootstrap(Settings(database_url=url), registry) as rl:
        lease = rl.runs.core_lease
        ready.touch()
        _await(go)
        return [
            {
                "target": target,
                **lease.perform(
                    {"lease": LEASE, "target": target, "value": run_id, "duration_s": 600},
                    idempotency_key=f"{run_id}:{target}",
                    run_id=run_id,
                ),
            }
            for target in targets
        ]


def _await(go: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the parent never said go")
        time.sleep(0.001)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests.support.game")
    sub = parser.add_subparsers(dest="command", required=True)
    command = sub.add_parser("race")
    for option in ("--url", "--run", "--ready", "--go", "--applied", "--targets"):
        command.add_argument(option, required=True)
    args = parser.parse_args(argv)
    found = race(
        args.url,
        str(UUID(args.run)),
        args.targets.split(","),
        Path(args.applied),
        Path(args.ready),
        Path(args.go),
    )
    print(json.dumps(found, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

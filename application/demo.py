"""The first main job: a few runs against a small built-in world, swept, and shown."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import UUID

from application.bootstrap import Runledger
from application.modules import Registry

HANG_S = 1.5


@dataclass
class DemoWorld:
    """A tiny game world: creatures, a market stall that will not pack up, fog that hangs,
    and weather that someone else may change while a run holds it."""

    weather: dict[str, str] = field(default_factory=lambda: {"north": "clear", "south": "clear"})
    creatures: set[str] = field(default_factory=set)
    stall_fixed: bool = False
    calls: Counter[str] = field(default_factory=Counter)

    def register(self, registry: Registry) -> None:
        module = registry.module("demo")
        module.action(
            "demo.spawn", perform=self.spawn, revert=self.despawn, reconcile=self.still_there
        )
        module.action("demo.stall", revert=self.pack_stall)
        module.action("demo.fog", revert=self.clear_fog, budget_ms=300)
        module.action("demo.zone", revert=self.close_zone)
        module.lease("demo.weather", apply=self.set_weather, restore=self.restore_weather)

    def spawn(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        kind = str(params.get("kind", "creature"))
        refs = [f"{kind}-{run_id[:8]}-{i}" for i in range(int(params.get("count", 1)))]
        self.creatures.update(refs)
        return {"ok": True, "resources": [{"kind": kind, "ref": ref} for ref in refs]}

    def despawn(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        self.calls[idempotency_key] += 1
        for r in resources:
            self.creatures.discard(r["ref"])
        return {"ok": True}

    def still_there(self, resources: list[dict[str, Any]], run_id: str) -> Any:
        return {"ok": True, "in_force": [r["ref"] for r in resources if r["ref"] in self.creatures]}

    def pack_stall(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        self.calls[idempotency_key] += 1
        if self.stall_fixed:
            return {"ok": True}
        return {"ok": False, "error": "the stall keeper is not answering"}

    def clear_fog(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        self.calls[idempotency_key] += 1
        time.sleep(HANG_S)
        return {"ok": True}

    def close_zone(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        self.calls[idempotency_key] += 1
        return {"ok": True}

    def set_weather(self, target: str, value: Any, run_id: str) -> Any:
        baseline = self.weather[target]
        self.weather[target] = value
        return {"ok": True, "baseline": baseline, "applied": value}

    def restore_weather(self, baseline: Any, expected: Any, run_id: str, target: str) -> Any:
        if self.weather[target] != expected:
            return {"drifted": True, "current": self.weather[target]}
        self.weather[target] = baseline
        return {"ok": True}


def _spawn(rl: Runledger, world: DemoWorld, run: UUID, step: str, refs: list[str]) -> None:
    key = f"{run}:{step}"
    placeholder = rl.ledger.record_placeholder(run, step, "demo", "demo.spawn", key)
    world.creatures.update(refs)
    rl.ledger.supersede(placeholder, [{"kind": "creature", "ref": r} for r in refs])


def _change(rl: Runledger, run: UUID, step: str, action: str, kind: str, ref: str,
            until_s: float | None = None) -> None:
    key = f"{run}:{step}"
    placeholder = rl.ledger.record_placeholder(run, step, "demo", action, key)
    until = None if until_s is None else rl.clock() + timedelta(seconds=until_s)
    rl.ledger.supersede(placeholder, [{"kind": kind, "ref": ref, "until": until}])


def _lease(rl: Runledger, world: DemoWorld, run: UUID, target: str, value: str) -> None:
    applied = world.set_weather(target, value, str(run))
    rl.ledger.record_lease(
        run, step=f"weather-{target}", module="demo", lease_id="demo.weather", target=target,
        baseline=applied["baseline"], applied=value,
        until=rl.clock() + timedelta(hours=1), idempotency_key=f"{run}:weather-{target}",
    )


def stage_runs(rl: Runledger, world: DemoWorld) -> list[UUID]:
    """Six runs, each ending a different way, as the runner would have left them."""
    ledger = rl.ledger
    festival = ledger.start_run("Spring festival")
    _spawn(rl, world, festival, "spawn-wolves", ["wolf-1", "wolf-2", "wolf-3"])
    _lease(rl, world, festival, "north", "rain")
    ledger.complete_run(festival)

    market = ledger.start_run("Night market")
    _change(rl, market, "open-stall", "demo.stall", "stall", "lantern-stall")
    ledger.complete_run(market)

    storm = ledger.start_run("Storm watch")
    _lease(rl, world, storm, "south", "storm")
    world.weather["south"] = "snow"  # a game master changed it by hand mid-run
    ledger.abort_run(storm, "the shard restarted")

    fog = ledger.start_run("Haunted fog")
    _change(rl, fog, "roll-fog", "demo.fog", "fog", "graveyard")
    ledger.complete_run(fog)

    parade = ledger.start_run("Cancelled parade")
    _spawn(rl, world, parade, "spawn-floats", ["float-1", "float-2"])
    ledger.cancel_run(parade, "alice", cleanup=False)

    duel = ledger.start_run("Duel in the square")
    _change(rl, duel, "open-zone", "demo.zone", "zone", "market-square", until_s=0.5)
    time.sleep(0.6)
    rl.reconciler.expire("demo", "zone", "market-square")  # the world closed it on time
    ledger.complete_run(duel)
    return [festival, market, storm, fog, parade, duel]


def sweep_until_settled(rl: Runledger, worker: str, limit: int = 6) -> int:
    """Sweep as the runner's ticks would, until no run has anything retryable left."""
    for done in range(1, limit + 1):
        if not rl.cleanup.sweep(worker):
            return done
    return limit


HARVEST = {
    "name": "Harvest festival",
    "phases": [
        {"id": "gather", "advance": "manual", "steps": [
            {"id": "spawn-crows", "action": "demo.spawn", "params": {"kind": "crow", "count": 4}},
            {"id": "fog-north", "action": "core.lease", "params": {
                "lease": "demo.weather", "target": "north", "value": "fog", "duration_s": 3600}},
        ]},
        {"id": "finale", "steps": [
            {"id": "spawn-king", "action": "demo.spawn",
             "params": {"kind": "scarecrow-king", "count": 1}},
        ]},
    ],
}


def builtin_registry() -> tuple[DemoWorld, Registry]:
    """The modules every runledger process has until modules are loaded from a directory."""
    world = DemoWorld()
    registry = Registry()
    world.register(registry)
    return world, registry

"""What the world-audit drill asks of the world: a pool of lease targets, each with a value of
its own set before the drill, and random runs of spawns, zones and leases over them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from scripts.drills.world_audit_check import Leased, Target

SANDBOX_KINDS = ["crow", "wolf", "boar"]
REDIS_KINDS = ["imp", "bat"]  # the Redis keys a run makes: <prefix><kind>:<tag>:<n>
Spec = dict[str, Any]


def pool(prefix: str) -> list[Target]:
    weather = [Target("sandbox.weather", side, f"before-{side}") for side in ("north", "south")]
    weather += [Target("sandbox.weather", side, f"before-{side}") for side in ("east", "west")]
    rates = [Target("sandbox.spawn_rate", "meadow", 0.25), Target("sandbox.spawn_rate", "fen", 0.5)]
    doors = [Target("redis.string", f"{prefix}door:{n}", f"before-{n}") for n in range(3)]
    return weather + rates + doors


def value_of(target: Target, run: int) -> Any:
    """Each run's value is its own, so the world itself says which run's value it holds."""
    return 100.0 + run if target.lease == "sandbox.spawn_rate" else f"run-{run}"


@dataclass
class Specs:
    """Random specs, and what the drill must know of each run it started from one."""

    targets: list[Target]
    rng: random.Random
    lease_keys: dict[str, str] = field(default_factory=dict)  # core.lease step key -> target ref
    holders: dict[str, UUID] = field(default_factory=dict)  # a run's lease value -> the run
    actions: dict[UUID, set[str]] = field(default_factory=dict)  # run -> actions its steps call

    def spec(self, n: int, leases: bool = True) -> Spec:
        rng = self.rng
        leased: set[str] = set()
        phases = []
        for p in range(rng.choice([1, 2, 2, 3])):
            steps = []
            for s in range(rng.randint(1, 3)):
                sid = f"p{p}s{s}"
                roll = rng.random()
                if roll < 0.3:
                    kind = rng.choice(SANDBOX_KINDS)
                    steps.append(_step(sid, "sandbox.spawn", kind=kind, count=rng.randint(1, 3)))
                elif roll < 0.45:
                    name, seconds = f"zone-{n}-{sid}", round(rng.uniform(4, 40), 1)
                    steps.append(_step(sid, "sandbox.zone", name=name, duration_s=seconds))
                elif roll < 0.65 or not leases:
                    kind = rng.choice(REDIS_KINDS)
                    steps.append(_step(sid, "redis.spawn", kind=kind, count=rng.randint(1, 3)))
                else:
                    target = rng.choice(self.targets)
                    if target.ref in leased:
                        continue  # its own earlier lease holds it: that step could never succeed
                    leased.add(target.ref)
                    seconds = 600 if rng.random() < 0.8 else round(rng.uniform(3, 10), 1)
                    params = {
                        "lease": target.lease,
                        "target": target.target,
                        "value": value_of(target, n),
                        "duration_s": seconds,
                    }
                    steps.append({"id": sid, "action": "core.lease", "params": params})
            after = rng.choice([0, 0.5, 2, 4])
            phases.append({"id": f"p{p}", "advance": "auto", "after_s": after, "steps": steps})
        return {"name": f"audit {n}", "phases": [p for p in phases if p["steps"]] or [_lone()]}

    @property
    def leases(self) -> Leased:
        return Leased(self.lease_keys, self.holders)

    def leased(self, run_id: UUID) -> list[str]:
        """The refs of the targets a run leases."""
        return [ref for key, ref in self.lease_keys.items() if key.startswith(f"{run_id}:")]

    def started(self, run_id: UUID, n: int, spec: Spec) -> None:
        steps = [s for phase in spec["phases"] for s in phase["steps"]]
        # A lease step calls its lease's apply: a hang on the lease reaches it.
        self.actions[run_id] = {s["params"].get("lease", s["action"]) for s in steps}
        by_ref = {t.ref: t for t in self.targets}
        for step in steps:
            if step["action"] == "core.lease":
                params = step["params"]
                target = by_ref[f"{params['lease']}#{params['target']}"]
                self.lease_keys[f"{run_id}:{step['id']}"] = target.ref
                self.holders[repr(value_of(target, n))] = run_id


def _step(sid: str, action: str, **params: Any) -> dict[str, Any]:
    return {"id": sid, "action": action, "params": params}


def _lone() -> dict[str, Any]:
    return {"id": "p0", "advance": "auto", "steps": [_step("p0s0", "sandbox.spawn", count=1)]}

"""The sandbox world as a module: its actions, leases and a watcher, over ``world.py``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from runledger.application.builtin_modules.sandbox.params import SpawnParams, ZoneParams
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.modules.loader import ModuleContext


def register(ctx: ModuleContext) -> None:
    """The sandbox as a module: spawns, zones and two leases, with a watcher thread that ends
    zones at their deadline and notices restarts."""
    world = SandboxWorld(Path(ctx.settings.get("RUNLEDGER_SANDBOX_PATH", "sandbox.sqlite3")))
    checks: dict[str, tuple[type[BaseModel], Callable[..., Any]]] = {
        "sandbox.spawn": (SpawnParams, lambda params: []),
        "sandbox.zone": (ZoneParams, lambda params: _zone_problems(world, params)),
    }
    for action, (model, check) in checks.items():
        ctx.action(
            action,
            params=model,
            check=check,
            perform=lambda params, idempotency_key, run_id, a=action: world.perform(
                a, params, idempotency_key
            ),
            revert=lambda resources, idempotency_key, run_id, a=action: world.revert(
                a, resources, idempotency_key
            ),
            reconcile=lambda resources, run_id: world.in_force(resources),
            budget_ms=int(ctx.settings.get("RUNLEDGER_SANDBOX_BUDGET_MS", "2000")),
        )
    for lease in ("sandbox.weather", "sandbox.spawn_rate"):
        ctx.lease(
            lease,
            apply=lambda target, value, run_id, idempotency_key, le=lease: world.apply(
                le, target, value, idempotency_key
            ),
            restore=lambda baseline, expected, run_id, target, idempotency_key, le=lease: (
                world.restore(le, baseline, expected, target, idempotency_key)
            ),
        )
    stop = threading.Event()
    threading.Thread(
        target=_watch, args=(world, ctx, stop), daemon=True, name="sandbox-watch"
    ).start()
    ctx.on_close(stop.set)


def _zone_problems(world: SandboxWorld, params: dict[str, Any]) -> list[dict[str, str]]:
    """A zone whose name is already open in the world: opening it again would adopt that one."""
    name = params.get("name", "zone")
    if isinstance(name, str) and world.zone_is_open(name):
        return [{"field": "name", "problem": f"a zone named {name!r} is already open"}]
    return []


def _watch(world: SandboxWorld, ctx: ModuleContext, stop: threading.Event) -> None:
    seen = world.epoch()
    while not stop.wait(0.2):
        try:
            for kind, ref in world.erase_due():
                ctx.events.expired(kind=kind, ref=ref)
            if (now := world.epoch()) != seen:
                seen = now
                ctx.log.info("sandbox restarted; asking core to reconcile")
                ctx.events.reconcile()
        except Exception:  # the watcher outlives one bad pass
            ctx.log.exception("sandbox watcher pass failed")

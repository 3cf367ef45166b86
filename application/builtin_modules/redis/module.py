"""A real module against a live Redis: keys as creatures, a key with a TTL as a zone whose
deadline Redis itself enforces, and leases over string keys restored by compare-and-set. Every
call is one Lua script (lua.py), so a key given back is ended atomically."""

from __future__ import annotations

import threading

import redis

from runledger.application.builtin_modules.redis.watcher import Watcher
from runledger.application.builtin_modules.redis.world import RedisWorld
from runledger.application.modules.loader import ModuleContext


def register(ctx: ModuleContext) -> None:
    url = ctx.settings.get("RUNLEDGER_REDIS_URL", "redis://127.0.0.1:6379/0")
    prefix = ctx.settings.get("RUNLEDGER_REDIS_PREFIX", "rl:")
    client = redis.Redis.from_url(
        url, socket_timeout=5, socket_connect_timeout=5, decode_responses=True
    )
    client.ping()  # a server that does not answer is this module's startup failure
    world = RedisWorld(client, prefix)
    budget = int(ctx.settings.get("RUNLEDGER_REDIS_BUDGET_MS", "2000"))
    ctx.action(
        "redis.spawn",
        perform=lambda params, idempotency_key, run_id: world.spawn(params, idempotency_key),
        revert=lambda resources, idempotency_key, run_id: world.revert(resources, idempotency_key),
        reconcile=lambda resources, run_id: world.in_force(resources),
        budget_ms=budget,
    )
    ctx.action(
        "redis.zone",
        perform=lambda params, idempotency_key, run_id: world.open_zone(params, idempotency_key),
        revert=lambda resources, idempotency_key, run_id: world.revert(resources, idempotency_key),
        reconcile=lambda resources, run_id: world.in_force(resources),
        budget_ms=budget,
    )
    ctx.lease(
        "redis.string",
        apply=lambda target, value, run_id, idempotency_key: world.apply(
            target, value, idempotency_key
        ),
        restore=lambda baseline, expected, run_id, target, idempotency_key: world.restore(
            baseline, expected, target, idempotency_key
        ),
    )
    stop = threading.Event()
    watcher = Watcher(url, prefix, ctx, stop)
    watcher.connect()
    threading.Thread(target=watcher.run, daemon=True, name="redis-watch").start()
    ctx.on_close(stop.set)

"""A real module against a live Redis: keys as creatures, a key with a TTL as a zone whose
deadline Redis itself enforces, and leases over string keys restored by compare-and-set."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from runledger.application.modules.loader import ModuleContext

# Put the baseline back only if the key still holds what this run applied; a key that already
# holds the baseline was restored before (a repeat after a crash); otherwise answer what is
# there now, and leave it alone.
RESTORE = """
local current = redis.call('GET', KEYS[1])
if current == false then current = nil end
local expected = ARGV[1] ~= '' and ARGV[2] or nil
local baseline = ARGV[3] ~= '' and ARGV[4] or nil
if current == baseline and current ~= expected then return {1} end
if current ~= expected then return {0, current or false} end
if ARGV[3] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[4]) end
return {1}
"""


class RedisWorld:
    def __init__(self, client: redis.Redis, prefix: str) -> None:
        # The client decodes answers: every key and value here is text.
        self.client = client
        self.prefix = prefix
        self._restore = client.register_script(RESTORE)

    def _made(self, key: str) -> str:
        return f"{self.prefix}made:{key}"

    def spawn(self, params: dict[str, Any], key: str) -> Any:
        kind = str(params.get("kind", "creature"))
        tag = hashlib.sha1(key.encode()).hexdigest()[:8]
        names = [f"{self.prefix}{kind}:{tag}:{i}" for i in range(int(params.get("count", 1)))]
        pipe = self.client.pipeline()
        for name in names:
            pipe.set(name, key, nx=True)
            pipe.sadd(self._made(key), name)
        pipe.execute()
        return {"ok": True, "resources": [{"kind": kind, "ref": n} for n in names]}

    def open_zone(self, params: dict[str, Any], key: str) -> Any:
        name = f"{self.prefix}zone:{params.get('name', 'zone')}"
        duration_ms = int(float(params.get("duration_s", 60)) * 1000)
        if self.client.set(name, key, px=duration_ms, nx=True):
            self.client.sadd(self._made(key), name)
            self.client.pexpire(self._made(key), duration_ms)
            ttl_ms = duration_ms
        else:
            ttl_ms = max(int(self.client.pttl(name)), 0)
        until = datetime.now(UTC) + timedelta(milliseconds=ttl_ms)
        return {
            "ok": True,
            "resources": [{"kind": "zone", "ref": name, "until": until.isoformat()}],
        }

    def revert(self, resources: list[dict[str, Any]], key: str) -> Any:
        names = [r["ref"] for r in resources] or sorted(self.client.smembers(self._made(key)))
        pipe = self.client.pipeline()
        if names:
            pipe.delete(*names)  # already gone counts as given back
            pipe.srem(self._made(key), *names)
        pipe.execute()
        return {"ok": True}

    def in_force(self, resources: list[dict[str, Any]]) -> Any:
        pipe = self.client.pipeline()
        for r in resources:
            pipe.exists(r["ref"])
        present = pipe.execute()
        return {
            "ok": True,
            "in_force": [r["ref"] for r, n in zip(resources, present, strict=True) if n],
        }

    def apply(self, target: str, value: Any) -> Any:
        baseline = self.client.getset(target, str(value))
        return {"ok": True, "baseline": baseline, "applied": str(value)}

    def restore(self, baseline: Any, expected: Any, target: str) -> Any:
        answer = self._restore(
            keys=[target],
            args=[
                "1" if expected is not None else "",
                expected or "",
                "1" if baseline is not None else "",
                baseline or "",
            ],
        )
        if answer[0] == 1:
            return {"ok": True}
        return {"drifted": True, "current": answer[1] if len(answer) > 1 else None}


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
        apply=lambda target, value, run_id: world.apply(target, value),
        restore=lambda baseline, expected, run_id, target: world.restore(
            baseline, expected, target
        ),
    )
    stop = threading.Event()
    watcher = Watcher(url, prefix, ctx, stop)
    watcher.connect()
    threading.Thread(target=watcher.run, daemon=True, name="redis-watch").start()
    ctx.on_close(stop.set)


class Watcher:
    """Turns Redis's own expiries into ``events.expired`` and a server restart (a dropped
    connection, or a new run id) into ``events.reconcile``."""

    def __init__(self, url: str, prefix: str, ctx: ModuleContext, stop: threading.Event) -> None:
        self.url = url
        self.prefix = prefix
        self.ctx = ctx
        self.stop = stop
        self.run_id: str | None = None
        self.pubsub: Any = None

    def connect(self) -> None:
        client = redis.Redis.from_url(
            self.url, socket_timeout=2, socket_connect_timeout=2, decode_responses=True
        )
        flags = str(client.config_get("notify-keyspace-events").get("notify-keyspace-events", ""))
        wanted = "".join(sorted(set(flags) | {"E", "x"}))
        client.config_set("notify-keyspace-events", wanted)
        db = client.connection_pool.connection_kwargs.get("db", 0)
        self.pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]
        self.pubsub.subscribe(f"__keyevent@{db}__:expired")
        self.run_id = str(client.info("server")["run_id"])
        self.client = client

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._listen()
            except redis.RedisError:
                self._reconnect()
            except Exception:  # one failed report must not end the watcher for good
                self.ctx.log.exception("redis watcher pass failed")
                self.stop.wait(0.5)

    def _listen(self) -> None:
        checked = 0.0
        while not self.stop.is_set():
            message = self.pubsub.get_message(timeout=0.2)
            if message and message.get("type") == "message":
                name = str(message["data"])
                if name.startswith(f"{self.prefix}zone:"):
                    self.ctx.events.expired(kind="zone", ref=name)
            checked += 0.2
            if checked >= 1.0:
                checked = 0.0
                if str(self.client.info("server")["run_id"]) != self.run_id:
                    raise redis.ConnectionError("the server restarted")

    def _reconnect(self) -> None:
        while not self.stop.wait(0.5):
            try:
                self.connect()
            except redis.RedisError:
                continue
            self.ctx.log.info("redis is back; asking core to reconcile")
            self.ctx.events.reconcile()
            return

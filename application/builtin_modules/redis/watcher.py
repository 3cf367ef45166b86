"""Redis's own expiries and restarts, told to core."""

from __future__ import annotations

import threading
from typing import Any

import redis

from runledger.application.modules.loader import ModuleContext


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

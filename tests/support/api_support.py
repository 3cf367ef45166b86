"""The admin HTTP API as the tests drive it: the real app over the test's runledger, one token
per role, and a shard whose reverts a test can break.

Test files import the fixtures they use from here (conftest.py belongs to the whole suite): each
is defined as ``*_fixture`` and named without the suffix, so a test's parameter does not
shadow the import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from runledger.application.asgi import create_app
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from tests.support.playing import phase, spec, step

SHARD = "shard"
SHARD_SPAWN = "shard.spawn"
ROLES = ("viewer", "operator", "admin")
PEOPLE = {"viewer": "vera", "operator": "alice", "admin": "root"}
"""Who holds each role's token: the name every write must be recorded under."""

DOWN = {"ok": False, "error": "the shard is down"}
"""What the shard answers every revert while it is down."""

Opener = Callable[..., Runledger]


@dataclass
class Shard:
    """A module whose performs make ``count`` things and whose reverts answer ``revert_answer``
    (a test sets a failure, then clears it, as a shard goes down and comes back)."""

    revert_answer: dict[str, Any] | None = None
    reverts: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, registry: Registry) -> None:
        registry.module(SHARD).action(SHARD_SPAWN, perform=self._perform, revert=self._revert)

    def _perform(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        refs = [f"{idempotency_key}/{i}" for i in range(int(params.get("count", 1)))]
        return {"ok": True, "resources": [{"kind": "crate", "ref": r} for r in refs]}

    def _revert(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        with self.lock:
            self.reverts.append(idempotency_key)
        return self.revert_answer or {"ok": True}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@dataclass
class Api:
    """A client of the app, speaking as one of the role's people (the admin unless told)."""

    client: TestClient
    rl: Runledger
    secrets: dict[str, str]

    def headers(self, who: str | None) -> dict[str, str]:
        return {} if who is None else bearer(self.secrets[who])

    def get(self, path: str, who: str | None = "admin", **kwargs: Any) -> Response:
        answer: Response = self.client.get(path, headers=self.headers(who), **kwargs)
        return answer

    def post(self, path: str, who: str | None = "admin", **kwargs: Any) -> Response:
        answer: Response = self.client.post(path, headers=self.headers(who), **kwargs)
        return answer

    def put(self, path: str, who: str | None = "admin", **kwargs: Any) -> Response:
        answer: Response = self.client.put(path, headers=self.headers(who), **kwargs)
        return answer

    def delete(self, path: str, who: str | None = "admin", **kwargs: Any) -> Response:
        answer: Response = self.client.delete(path, headers=self.headers(who), **kwargs)
        return answer

    def start(self, body: dict[str, Any], who: str = "operator") -> UUID:
        answer = self.post("/admin/events/runs", who, json=body)
        assert answer.status_code == 201, answer.text
        return UUID(answer.json()["run"]["run_id"])

    def run(self, run_id: UUID) -> dict[str, Any]:
        answer = self.get(f"/admin/events/runs/{run_id}", "viewer")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found


def serving(rl: Runledger) -> Api:
    """The real app over ``rl``, with a token per role issued in the role's person's name.
    Server errors come back as 500 answers, never as exceptions: a test asserts on them."""
    secrets = {role: rl.tokens.issue(PEOPLE[role], role, by="test").secret for role in ROLES}
    client = TestClient(create_app(rl), raise_server_exceptions=False)
    return Api(client, rl, secrets)


def shard_run(count: int = 2, *, name: str = "festival", advance: str = "auto") -> dict[str, Any]:
    """A one-phase run whose step makes ``count`` crates on the shard."""
    return spec(phase("p1", step("spawn", SHARD_SPAWN, count=count), advance=advance), name=name)


def tick(rl: Runledger, times: int = 1) -> None:
    runner = rl.runner("w1")
    for _ in range(times):
        runner.tick()


@pytest.fixture(name="shard")
def shard_fixture(registry: Registry) -> Shard:
    shard = Shard()
    shard.install(registry)
    return shard


@pytest.fixture(name="api_rl")
def api_rl_fixture(opened: Opener, shard: Shard) -> Runledger:
    """The test's runledger on the test's clock, with the game and the shard registered.
    Retries wait a minute, so an entry that failed shows when it is next tried."""
    return opened(retry_delays_s=(60.0,), max_revert_attempts=2)


@pytest.fixture(name="api")
def api_fixture(api_rl: Runledger) -> Iterator[Api]:
    served = serving(api_rl)
    with served.client:
        yield served

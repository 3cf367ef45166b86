"""A scripted world for tests: the port runledger talks to, with answers chosen per test.

It counts every revert call per idempotency key and every restore per target, so a test can
prove that nothing was given back twice.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runledger.application.modules.protocol import Registry

Answer = Callable[[list[dict[str, Any]], str], Any]


@dataclass
class World:
    name: str = "world"
    answers: dict[str, Answer] = field(default_factory=dict)
    reverts: Counter[str] = field(default_factory=Counter)
    reverted_refs: Counter[str] = field(default_factory=Counter)
    restores: Counter[str] = field(default_factory=Counter)
    restore_answer: Callable[[Any, Any, str], Any] | None = None
    in_force: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, registry: Registry, *actions: str, budget_ms: int | None = None) -> None:
        module = registry.module(self.name)
        for action in actions:
            module.action(
                action,
                revert=self._revert(action),
                reconcile=self._reconcile(action),
                budget_ms=budget_ms,
            )
        module.lease("weather", apply=lambda **_: {"ok": True}, restore=self._restore)

    def answer(self, action: str, fn: Answer) -> None:
        self.answers[action] = fn

    def _revert(self, action: str) -> Callable[..., Any]:
        def revert(resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
            with self.lock:
                self.reverts[idempotency_key] += 1
            fn = self.answers.get(action)
            answer = fn(resources, idempotency_key) if fn else {"ok": True}
            if isinstance(answer, dict) and answer.get("ok") is True:
                failed = set(answer.get("failed", []))
                with self.lock:
                    for r in resources:
                        if r["ref"] not in failed:
                            self.reverted_refs[r["ref"]] += 1
            return answer

        return revert

    def _reconcile(self, action: str) -> Callable[..., Any]:
        def reconcile(resources: list[dict[str, Any]], run_id: str) -> Any:
            everything = {"ok": True, "in_force": [r["ref"] for r in resources]}
            return self.in_force.get(action, everything)

        return reconcile

    def _restore(
        self, baseline: Any, expected: Any, run_id: str, target: str, idempotency_key: str
    ) -> Any:
        with self.lock:
            self.restores[target] += 1
        if self.restore_answer:
            return self.restore_answer(baseline, expected, target)
        return {"ok": True}


def hang(seconds: float) -> Answer:
    def answer(resources: list[dict[str, Any]], key: str) -> Any:
        time.sleep(seconds)
        return {"ok": True}

    return answer


def throw(resources: list[dict[str, Any]], key: str) -> Any:
    raise RuntimeError("the shard dropped the connection")

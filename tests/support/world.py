"""The one fake world the tests play in: a module whose performs make things, whose reverts take
them back and whose lease overrides one value per target, as MODULE_API 2.0 says, except where a
test scripts what a verb answers. It does not fence a key its revert ended: a perform under it
makes things again.

It keeps what it was asked, so a test reads the world and not only the ledger: every perform,
revert and restore, how often each key was reverted and each target applied and restored, so
that a test can prove nothing was given back twice.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from runledger.application.modules.protocol import ModuleFn, Registry

LEASE = "weather"
CLEAR = "clear"
"""The value of a target no lease has touched."""

Verb = Literal["perform", "revert", "reconcile", "apply", "restore"]
Answer = Callable[..., Any]
"""A scripted answer, given what its verb was asked: perform(params, key), revert(resources,
key), reconcile(resources), apply(target, value) or restore(baseline, expected, target). It
answers, or raises, in the world's place."""


@dataclass
class Scripted:
    """What a test scripted a verb to answer, on one action or lease, and for one run if told."""

    scripts: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    answers: dict[tuple[str, str, str | None], Answer] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, verb: Verb, name: str, *answers: Answer) -> None:
        """The next calls of ``verb`` on ``name`` answer these in turn; then as they did."""
        with self.lock:
            self.scripts.setdefault((verb, name), []).extend(answers)

    def answer(self, verb: Verb, name: str, answer: Answer | None, run: object = None) -> None:
        """From now on ``verb`` on ``name`` answers ``answer``, for ``run`` only if given (before
        any other script); None: as the world would."""
        at = (verb, name, None if run is None else str(run))
        with self.lock:
            self.answers.pop(at, None)
            if answer is not None:
                self.answers[at] = answer

    def _scripted(self, verb: Verb, name: str, run_id: str) -> Answer | None:
        with self.lock:
            if (verb, name, run_id) in self.answers:
                return self.answers[(verb, name, run_id)]
            queued = self.scripts.get((verb, name))
            return queued.pop(0) if queued else self.answers.get((verb, name, None))


@dataclass
class Weather(Scripted):
    """The lease: ``values`` holds each target's value; an apply overrides it, a restore puts
    the baseline back only if the target still holds what was applied (compare-and-set)."""

    values: dict[str, Any] = field(default_factory=dict)
    applies: Counter[str] = field(default_factory=Counter)
    restore_calls: list[dict[str, Any]] = field(default_factory=list)
    restores: Counter[str] = field(default_factory=Counter)
    """Restore calls per target."""
    applied_under: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)

    def _apply(self, lease: str, target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
        with self.lock:
            self.applies[target] += 1
        scripted = self._scripted("apply", lease, run_id)
        if scripted:
            return scripted(target, value)
        return self._override(target, value, idempotency_key)

    def _override(self, target: str, value: Any, key: str) -> Any:
        """A repeat under one key answers the first apply; an ended key applies nothing."""
        with self.lock:
            if key in self.ended:
                return {"ok": False, "retry": False, "error": "this key was given back"}
            if key not in self.applied_under:
                self.applied_under[key] = (self.values.get(target, CLEAR), value)
                self.values[target] = value
            baseline, applied = self.applied_under[key]
        return {"ok": True, "baseline": baseline, "applied": applied}

    def _restore(
        self,
        lease: str,
        baseline: Any,
        expected: Any,
        run_id: str,
        target: str,
        idempotency_key: str,
    ) -> Any:
        with self.lock:
            self.restore_calls.append(
                {"target": target, "baseline": baseline, "expected": expected}
            )
            self.restores[target] += 1
        scripted = self._scripted("restore", lease, run_id)
        if scripted:
            return scripted(baseline, expected, target)
        return self._put_back(target, baseline, expected, idempotency_key)

    def _put_back(self, target: str, baseline: Any, expected: Any, key: str) -> Any:
        """What was applied under the key wins over the arguments; nothing applied under it is
        given back at once; a target holding its baseline was restored before. The key ends."""
        with self.lock:
            self.ended.add(key)
            if key in self.applied_under:
                baseline, expected = self.applied_under[key]
            elif expected is None:
                return {"ok": True}
            current = self.values.get(target, CLEAR)
            if current == baseline and current != expected:
                return {"ok": True}
            if current != expected:
                return {"drifted": True, "current": current}
            self.values[target] = baseline
        return {"ok": True}


@dataclass(frozen=True)
class Revert:
    action: str
    key: str
    refs: tuple[str, ...]


@dataclass
class World(Weather):
    """A module ``name``: actions that make things of ``kind``, and the lease ``lease``."""

    name: str = "world"
    lease: str = LEASE
    kind: str = "creature"
    alive: dict[str, str] = field(default_factory=dict)
    """Each thing made and not taken back, with the idempotency key that made it."""
    performs: list[tuple[str, str]] = field(default_factory=list)
    """(action, key) of every perform asked."""
    revert_calls: list[Revert] = field(default_factory=list)
    reverts: Counter[str] = field(default_factory=Counter)
    """Revert calls per idempotency key."""
    reverted_refs: Counter[str] = field(default_factory=Counter)
    """Refs a revert named and answered given back."""

    def install(self, registry: Registry, *actions: str, budget_ms: int | None = None) -> None:
        module = registry.module(self.name)
        for action in actions:
            module.action(
                action,
                perform=self.verb("perform", action),
                revert=self.verb("revert", action),
                reconcile=self.verb("reconcile", action),
                budget_ms=budget_ms,
            )
        if self.lease not in registry.leases:
            self.install_lease(registry, self.name, self.lease)

    def install_lease(self, registry: Registry, module: str, lease_id: str) -> None:
        """One more lease over the same values, registered by ``module``."""
        registry.module(module).lease(
            lease_id, apply=self.verb("apply", lease_id), restore=self.verb("restore", lease_id)
        )

    def verb(self, verb: Verb, name: str) -> ModuleFn:
        """The module function ``verb`` of the action or lease ``name``, as install registers it."""
        own: Callable[..., Any] = getattr(self, f"_{verb}")

        def call(**asked: Any) -> Any:
            return own(name, **asked)

        return call

    def make(self, params: dict[str, Any], key: str) -> Any:
        """A perform no script answers: the step's ``answer`` param as it is, or the resources
        it ``named``, or ``count`` things (one unless told)."""
        if "answer" in params:
            return params["answer"]
        made = params["named"] if "named" in params else self._things(key, params)
        with self.lock:
            for thing in made:
                self.alive[thing["ref"]] = key
        return {"ok": True, "resources": made}

    def keys_performed(self, action: str) -> list[str]:
        return [key for done, key in self.performs if done == action]

    def _things(self, key: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        count = int(params.get("count", 1))
        return [{"kind": self.kind, "ref": f"{key}/{i}"} for i in range(count)]

    def _perform(
        self, action: str, params: dict[str, Any], idempotency_key: str, run_id: str
    ) -> Any:
        with self.lock:
            self.performs.append((action, idempotency_key))
        answer = self._scripted("perform", action, run_id) or self.make
        return answer(params, idempotency_key)

    def _revert(
        self, action: str, resources: list[dict[str, Any]], idempotency_key: str, run_id: str
    ) -> Any:
        refs = tuple(r["ref"] for r in resources)
        with self.lock:
            self.revert_calls.append(Revert(action, idempotency_key, refs))
            self.reverts[idempotency_key] += 1
        scripted = self._scripted("revert", action, run_id)
        answer = scripted(resources, idempotency_key) if scripted else {"ok": True}
        failed = failed_refs(answer)
        if failed is not None:
            self._take_back(idempotency_key, refs, failed)
        return answer

    def _take_back(self, key: str, refs: tuple[str, ...], failed: set[str]) -> None:
        with self.lock:
            # No resources named: whatever was made under the key goes back.
            gone = refs or tuple(r for r, made_by in self.alive.items() if made_by == key)
            for ref in gone:
                if ref not in failed:
                    self.alive.pop(ref, None)
            self.reverted_refs.update(r for r in refs if r not in failed)

    def _reconcile(self, action: str, resources: list[dict[str, Any]], run_id: str) -> Any:
        scripted = self._scripted("reconcile", action, run_id)
        if scripted:
            return scripted(resources)
        return {"ok": True, "in_force": [r["ref"] for r in resources]}


def failed_refs(answer: Any) -> set[str] | None:
    """The refs a revert's answer says it could not give back, or None if it gave back nothing:
    read only from a plain ``{ok: true}``, since a script may answer anything at all."""
    if type(answer) is not dict or answer.get("ok") is not True:
        return None
    failed = answer.get("failed", [])
    return {r for r in failed if type(r) is str} if type(failed) is list else set()


def answering(value: Any) -> Answer:
    """A scripted answer that is ``value`` whatever it is asked."""
    return lambda *_: value


def throws(error: str = "the shard dropped the connection") -> Answer:
    def answer(*_: Any) -> Any:
        raise RuntimeError(error)

    return answer


def hangs(seconds: float, then: Any) -> Answer:
    """A call that answers ``then`` only after ``seconds``: past any budget a test sets."""

    def answer(*_: Any) -> Any:
        time.sleep(seconds)
        return then

    return answer

"""Definitions (W5) as the tests author them: a module that counts every call core makes to it,
with a params model and a dry-run check, and specs that use it."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from pydantic import BaseModel, ConfigDict, Field

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger

MODULE = "fair"
STALL = "fair.stall"
"""An action with a params model and a dry-run check."""
PLAIN = "fair.plain"
"""An action with neither: only the shape of its params is checked."""
LIGHTS = "fair.lights"
"""A lease."""


class StallParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(min_length=1)
    count: int = Field(1, ge=1)


@dataclass
class Fair:
    """A world of stalls. ``calls`` counts every call core made, by name; the world changes
    only through perform, revert, apply and restore."""

    calls: Counter[str] = field(default_factory=Counter)
    stalls: dict[str, str] = field(default_factory=dict)
    performed: list[tuple[str, str]] = field(default_factory=list)
    """(idempotency key, kind) of every stall perform made, kept after it was given back."""
    lights: dict[str, Any] = field(default_factory=dict)
    check_answer: Any = None
    """What the dry-run check answers instead of its own verdict (garbage, a raise), when set."""
    check_sleep_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, registry: Registry) -> None:
        module = registry.module(MODULE)
        module.action(
            STALL,
            perform=self._counted("perform", self._perform),
            revert=self._counted("revert", self._revert),
            reconcile=self._counted("reconcile", lambda resources, run_id: {"ok": True}),
            params=StallParams,
            check=self._counted("check", self._check),
        )
        module.action(
            PLAIN,
            perform=self._counted("perform", self._perform),
            revert=self._counted("revert", self._revert),
        )
        module.lease(
            LIGHTS,
            apply=self._counted("apply", self._apply),
            restore=self._counted("restore", self._restore),
        )

    @property
    def world_calls(self) -> int:
        """Calls that could have changed the world."""
        return sum(self.calls[n] for n in ("perform", "revert", "reconcile", "apply", "restore"))

    def _counted(self, name: str, fn: Any) -> Any:
        def call(**kwargs: Any) -> Any:
            with self.lock:
                self.calls[name] += 1
            return fn(**kwargs)

        return call

    def _perform(self, params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        with self.lock:
            self.stalls[idempotency_key] = str(params.get("kind"))
            self.performed.append((idempotency_key, str(params.get("kind"))))
        return {"ok": True, "resources": [{"kind": "stall", "ref": idempotency_key}]}

    def _revert(self, resources: list[dict[str, Any]], idempotency_key: str, run_id: str) -> Any:
        with self.lock:
            self.stalls.pop(idempotency_key, None)
        return {"ok": True}

    def _check(self, params: dict[str, Any]) -> Any:
        time.sleep(self.check_sleep_s)
        if self.check_answer is not None:
            if isinstance(self.check_answer, BaseException):
                raise self.check_answer
            return self.check_answer
        if params.get("kind") == "dragon":
            return [{"field": "kind", "problem": "no stall may sell dragons"}]
        return []

    def _apply(self, target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
        with self.lock:
            baseline = self.lights.get(target, "off")
            self.lights[target] = value
        return {"ok": True, "baseline": baseline, "applied": value}

    def _restore(
        self, baseline: Any, expected: Any, run_id: str, target: str, idempotency_key: str
    ) -> Any:
        with self.lock:
            self.lights[target] = baseline
        return {"ok": True}


def stall(step_id: str = "stall", **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": STALL, "params": {"kind": "apples"} | params}


def lights(step_id: str = "lights", target: str = "square", duration_s: float = 600) -> Any:
    return {
        "id": step_id,
        "action": "core.lease",
        "params": {"lease": LIGHTS, "target": target, "value": "on", "duration_s": duration_s},
    }


def phase(phase_id: str, *steps: dict[str, Any], **rule: Any) -> dict[str, Any]:
    return {"id": phase_id, "steps": list(steps), **rule}


def fair_spec(*phases: dict[str, Any], name: str = "Village fair") -> dict[str, Any]:
    return {"name": name, "phases": list(phases) or [phase("open", stall())]}


def verified_and_published(rl: Runledger, name: str, spec: dict[str, Any]) -> None:
    """A definition created by ann, verified by rita and published by paul."""
    rl.definitions.create(name, spec, "ann")
    rl.definitions.verify(name, "rita")
    rl.definitions.publish(name, "paul")


def schedule(rl: Runledger, name: str, after_s: float) -> UUID:
    at: datetime = rl.clock() + timedelta(seconds=after_s)
    return rl.occurrences.schedule(name, at, "sam").id


@pytest.fixture(name="fair")
def fair_fixture(registry: Registry) -> Fair:
    """The fair's module, registered for the test's runledgers."""
    found = Fair()
    found.install(registry)
    return found


@pytest.fixture(name="rl")
def fair_rl_fixture(opened: Callable[..., Runledger], fair: Fair) -> Runledger:
    """The test's runledger on the test's clock, with the fair's module registered."""
    return opened()

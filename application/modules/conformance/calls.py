"""The module's functions called as core calls them, and what the kit reads from them."""

from __future__ import annotations

import json
import uuid
from typing import Any

from runledger.application.modules.answers import (
    ApplyDone,
    PerformDone,
    ReconcileAnswer,
    RevertDone,
    RevertRefused,
    not_confirmed,
    same_value,
)
from runledger.application.modules.conformance.subject import Subject
from runledger.application.modules.deadline import Returned, call_with_deadline
from runledger.application.modules.protocol import Action, Lease

DEADLINE_S = 30.0
BEFORE = "kit-before"


class Broken(Exception):
    """One check's failure, as the sentence that names it."""


def fits(model: type[Any], answer: Any) -> Any:
    try:
        return model.model_validate(answer, strict=False)
    except ValueError:
        return None


def fresh_key() -> str:
    return f"kit-{uuid.uuid4().hex[:12]}"


def same_resources(one: list[dict[str, Any]], other: list[dict[str, Any]]) -> bool:
    """Two answers' resources alike but for ``until``, which a world may compute afresh for
    each answer (the time left, from now)."""
    shown = [
        sorted(json.dumps({**r, "until": 0}, sort_keys=True) for r in rs) for rs in (one, other)
    ]
    return shown[0] == shown[1]


class Calls:
    """The subject's functions, called as core calls them: by keyword, under a deadline, each
    answer copied into plain data (an answer that is not is a broken promise here)."""

    def __init__(self, subject: Subject, action: Action, lease: Lease | None) -> None:
        self.s, self.run_id = subject, str(uuid.uuid4())
        self.fns = {"perform": action.perform, "revert": action.revert}
        self.fns |= {"reconcile": action.reconcile} if action.reconcile else {}
        self.fns |= {"apply": lease.apply, "restore": lease.restore} if lease else {}

    def call(self, verb: str, **kwargs: Any) -> Any:
        owner = self.s.lease if verb in ("apply", "restore") else self.s.action
        fn = self.fns.get(verb)
        if fn is None:
            raise Broken(f"{owner} has no {verb}")
        outcome = call_with_deadline(fn, {**kwargs, "run_id": self.run_id}, DEADLINE_S)
        if not isinstance(outcome, Returned):
            raise Broken(not_confirmed(outcome, f"{owner}.{verb}"))
        return outcome.value

    def perform(self, key: str) -> Any:
        return self.call("perform", params=dict(self.s.params), idempotency_key=key)

    def made(self, key: str, answer: Any = None) -> list[dict[str, Any]]:
        answer = self.perform(key) if answer is None else answer
        if (done := fits(PerformDone, answer)) is None:
            raise Broken(f"perform under {key} answered {answer!r}, not {{ok: true, resources}}")
        return [r.model_dump(mode="json", exclude_none=True) for r in done.resources]

    def revert(self, key: str) -> None:
        answer = self.call("revert", resources=[], idempotency_key=key)
        if (done := fits(RevertDone, answer)) is None or done.failed:
            raise Broken(f"revert by key {key} answered {answer!r}, not {{ok: true}}")

    def left(self, key: str, resources: list[dict[str, Any]]) -> set[str]:
        """What of ``resources`` (and of what ``key`` made, by the probe) the world holds."""
        found = set(self.s.probe(key)) if self.s.probe else set()
        if resources and "reconcile" in self.fns:
            answer = self.call("reconcile", resources=resources)
            if (known := fits(ReconcileAnswer, answer)) is None:
                raise Broken(f"reconcile answered {answer!r}, not {{ok: true, in_force}}")
            found |= set(known.in_force)
        return found

    def apply(self, key: str, value: Any) -> Any:
        return self.call("apply", target=self.s.target, value=value, idempotency_key=key)

    def applied(self, key: str, value: Any) -> ApplyDone:
        answer = self.apply(key, value)
        done: ApplyDone | None = fits(ApplyDone, answer)
        if done is None:
            raise Broken(f"apply under {key} answered {answer!r}, not {{ok, baseline, applied}}")
        return done

    def restore(self, key: str, baseline: Any = None, expected: Any = None) -> Any:
        return self.call(
            "restore",
            baseline=baseline,
            expected=expected,
            target=self.s.target,
            idempotency_key=key,
        )

    def before(self) -> Any:
        """The target's value before a lease check: set by the kit when it may, else read."""
        if self.s.set_value is not None:
            self.s.set_value(self.s.target, BEFORE)
            return BEFORE
        return self.holds(None)

    def holds(self, expected: Any, when: str = "") -> Any:
        """What the target holds, read by an apply and a restore under a fresh key."""
        key = fresh_key()
        found = self.applied(key, self.s.values[0])
        if (answer := self.restore(key, found.baseline, found.applied)) != {"ok": True}:
            raise Broken(f"restore with the baseline its own apply answered said {answer!r}")
        if when and not same_value(found.baseline, expected):
            raise Broken(f"{when}, the target held {found.baseline!r}, not {expected!r}")
        return found.baseline


def refused(answer: Any) -> bool:
    """``{ok: false, retry: false, error}``: the answer under a key given back."""
    return fits(RevertRefused, answer) is not None

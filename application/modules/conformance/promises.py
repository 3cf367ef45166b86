"""The promises of MODULE_API 2.0, one check each. A check raises ``Broken`` with a sentence
naming what the module did instead."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from runledger.application.modules.answers import RevertDrifted, same_value
from runledger.application.modules.conformance.calls import (
    DEADLINE_S,
    Broken,
    Calls,
    fits,
    fresh_key,
    refused,
    same_resources,
)

SLOW_S = 1.0
OTHER = "kit-somebody-else"


def perform_is_idempotent(m: Calls) -> None:
    key = fresh_key()
    first, again = m.made(key), m.made(key)
    if not same_resources(first, again):
        raise Broken(f"perform repeated with one key answered {again}, not {first}")
    if (held := m.left(key, first)) != {r["ref"] for r in first}:
        raise Broken(f"after a perform that named {first}, the world holds {sorted(held)}")
    m.revert(key)


def revert_by_key_gives_back_what_it_made(m: Calls) -> None:
    key = fresh_key()
    made = m.made(key)
    m.revert(key)
    if left := m.left(key, made):
        raise Broken(f"revert by key with no resources left {sorted(left)} in the world")


def revert_ends_the_key(m: Calls) -> None:
    for when in ("after it made something", "before any perform"):
        key = fresh_key()
        made = m.made(key) if when.startswith("after") else []
        m.revert(key)
        answer = m.perform(key)
        late = [] if refused(answer) else m.made(key, answer)
        if left := m.left(key, made + late):
            raise Broken(f"a perform under a key given back {when} made {sorted(left)}")
        if late or not refused(answer):
            raise Broken(
                f"a perform under a key given back {when} answered {answer!r}, "
                "not {ok: false, retry: false, error}: revert must end (fence) its key"
            )


def perform_in_flight_makes_nothing(m: Calls) -> None:
    slow = [m.s.slow_perform] if m.s.slow_perform else []
    for n in range(len(slow) + m.s.races):
        key, ready = fresh_key(), threading.Barrier(2)
        answers: list[Any] = []

        def perform(key: str = key, answers: list[Any] = answers, ready: Any = ready) -> None:
            ready.wait()
            answers.append(m.perform(key))

        thread = threading.Thread(target=perform, daemon=True, name="kit-perform")
        with slow[0](SLOW_S) if n < len(slow) else _nothing():
            thread.start()
            ready.wait()
            if n < len(slow):
                time.sleep(SLOW_S / 3)  # the perform has started and waits
        m.revert(key)
        thread.join(DEADLINE_S + SLOW_S)
        how = "while it waited" if n < len(slow) else "at the same moment"
        if not answers:
            raise Broken(f"a perform whose key was given back {how} did not answer")
        late = [] if refused(answers[0]) else m.made(key, answers[0])
        if left := m.left(key, late):
            raise Broken(
                f"a perform whose key was given back {how} left {sorted(left)} in the world: "
                "checking the fence and making must be one atomic step"
            )


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def apply_twice_answers_the_first(m: Calls) -> None:
    before, key = m.before(), fresh_key()
    first = m.applied(key, m.s.values[0])
    if not same_value(first.baseline, before):
        raise Broken(f"apply answered the baseline {first.baseline!r}; the target held {before!r}")
    again = m.applied(key, m.s.values[1])
    if not same_value([again.baseline, again.applied], [first.baseline, first.applied]):
        raise Broken(
            f"apply repeated with one key answered {again.baseline!r} -> {again.applied!r}, "
            f"not the first apply's {first.baseline!r} -> {first.applied!r}"
        )
    m.restore(key, first.baseline, first.applied)
    m.holds(before, "after a repeated apply and its restore")


def restore_by_key_puts_back_what_was_found(m: Calls) -> None:
    before, key = m.before(), fresh_key()
    m.applied(key, m.s.values[0])
    if (answer := m.restore(key)) != {"ok": True}:
        raise Broken(f"restore by key with baseline=None, expected=None answered {answer!r}")
    m.holds(before, "after a restore by key with baseline=None, expected=None")
    if not refused(answer := m.apply(key, m.s.values[1])):
        raise Broken(f"an apply under a key a restore had ended answered {answer!r}")
    m.holds(before, "after an apply under a key a restore had ended")


def restore_with_nothing_applied_ends_the_key(m: Calls) -> None:
    before, key = m.before(), fresh_key()
    if (answer := m.restore(key)) != {"ok": True}:
        raise Broken(f"restore under a key that applied nothing answered {answer!r}, not ok")
    if not refused(answer := m.apply(key, m.s.values[0])):
        raise Broken(f"an apply under a key restored before it applied answered {answer!r}")
    m.holds(before, "after an apply under a key restored before it applied")


def drift_is_left_alone(m: Calls) -> None:
    m.before()
    key = fresh_key()
    m.applied(key, m.s.values[0])
    if m.s.set_value is not None:
        m.s.set_value(m.s.target, OTHER)
    answer = m.restore(key)
    drift = fits(RevertDrifted, answer)
    if drift is None or not same_value(drift.current, OTHER):
        raise Broken(
            f"restore by key over somebody else's {OTHER!r} answered {answer!r}, "
            f"not {{drifted: true, current: {OTHER!r}}}"
        )
    m.holds(OTHER, "after a drifted restore")

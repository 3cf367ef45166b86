from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    Strict,
    ValidationError,
)

from runledger.application.modules.deadline import Malformed, Outcome, Raised, Returned, TimedOut
from runledger.application.modules.plain import describe_error
from runledger.domain.resource import MAX_KIND, MAX_REF
from runledger.domain.values import (
    made_storable,
    storable,
    storable_text,
    validation_problem,
    value_problem,
)

log = logging.getLogger("runledger.answers")
T = TypeVar("T")
StoredValue = Annotated[Any, AfterValidator(storable)]
StoredText = Annotated[str, AfterValidator(storable_text)]

VerdictKind = Literal["done", "drifted", "terminal", "retry"]


def _exactly(expected: bool) -> Callable[[bool], bool]:
    def check(value: bool) -> bool:
        if value is not expected:
            raise ValueError(f"must be {expected}")
        return value

    return check


# A real boolean, never 1 or "yes": 1 == True in Python, and strict Literal[True] lets it pass.
IsTrue = Annotated[bool, Strict(), AfterValidator(_exactly(True))]
IsFalse = Annotated[bool, Strict(), AfterValidator(_exactly(False))]


class _Answer(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class RevertDone(_Answer):
    ok: IsTrue
    failed: list[str] = []


class RevertDrifted(_Answer):
    drifted: IsTrue
    current: Annotated[JsonValue, AfterValidator(storable)] = None


class RevertRefused(_Answer):
    ok: IsFalse
    retry: IsFalse
    error: str


class NamedResource(BaseModel):
    """A resource a dispatch named: the module's opaque names and what it needs to give it back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: StoredText = Field(min_length=1, max_length=MAX_KIND)
    ref: StoredText = Field(min_length=1, max_length=MAX_REF)
    payload: Annotated[dict[str, Any], AfterValidator(storable)] | None = None
    member_key: Annotated[StoredText, Field(max_length=MAX_REF)] | None = None
    until: AwareDatetime | None = None


class PerformDone(_Answer):
    ok: IsTrue
    resources: list[NamedResource]


class ApplyDone(_Answer):
    ok: IsTrue
    baseline: StoredValue
    applied: StoredValue


class ReconcileAnswer(_Answer):
    ok: IsTrue
    in_force: list[StoredText]


ALREADY_RESTORED = "already restored"


@dataclass(frozen=True)
class Verdict:
    outcome: VerdictKind
    error: str | None = None
    failed: frozenset[str] = field(default_factory=frozenset)
    current: Any = None
    note: str | None = None


def _show(value: Any) -> str:
    """An answer as a person reads it; answers are plain data by now, so this cannot raise."""
    return made_storable(json.dumps(value, default=repr), 120)


def _parse(model: type[_Answer], raw: Any) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def _judged(
    judge: Callable[[Outcome, str], T], failed: Callable[[str], T]
) -> Callable[[Outcome, str], T]:
    """Judging never raises: if reading an answer fails after all, that is a readable retry."""

    @wraps(judge)
    def safely(outcome: Outcome, what: str) -> T:
        try:
            return judge(outcome, what)
        except Exception as error:  # recorded as the call's verdict, and logged in full
            log.exception("judging an answer of %s failed", what)
            return failed(f"{what}'s answer could not be judged: {describe_error(error)}")

    return safely


def _unreadable(outcome: Outcome, what: str) -> str | None:
    if isinstance(outcome, TimedOut):
        return f"{what} did not answer within {outcome.seconds:g}s"
    if isinstance(outcome, Raised):
        return f"{what} raised {outcome.message}"
    if isinstance(outcome, Malformed):
        return f"{what} answered something that is not plain data: {outcome.reason}"
    return None


def not_confirmed(outcome: Outcome, what: str) -> str:
    """Why an answer did not confirm anything, in words that cannot raise."""
    if isinstance(outcome, Returned):
        return f"{what} answered {_show(outcome.value)}"
    return _unreadable(outcome, what) or f"{what} did not answer"


def _classify_revert(outcome: Outcome, what: str) -> Verdict:
    if (problem := _unreadable(outcome, what)) is not None or not isinstance(outcome, Returned):
        return Verdict("retry", problem)
    raw = outcome.value
    # A drift is read first: an answer that also says ok must not hide it.
    unsafe = value_problem(raw.get("current"), "current") if isinstance(raw, dict) else None
    if unsafe is not None and raw.get("drifted") is True:
        return Verdict("retry", f"{what} answered a drift whose {': '.join(unsafe)}")
    if (drift := _parse(RevertDrifted, raw)) is not None:
        return Verdict(
            "drifted",
            f"the value is now {_show(drift.current)} rather than what this run applied, "
            "so it was left alone",
            current=drift.current,
        )
    if (done := _parse(RevertDone, raw)) is not None:
        return Verdict("done", failed=frozenset(made_storable(ref) for ref in done.failed))
    if (refused := _parse(RevertRefused, raw)) is not None:
        return Verdict("terminal", made_storable(refused.error))
    if isinstance(raw, dict) and isinstance(raw.get("error"), str) and raw.get("ok") is False:
        return Verdict("retry", made_storable(raw["error"]))
    return Verdict("retry", f"{what} answered {_show(raw)}, which is not a revert answer")


classify_revert = _judged(_classify_revert, lambda error: Verdict("retry", error))
"""Read one revert or restore answer so that no shape a failure can take reads as success."""


def same_value(one: Any, other: Any) -> bool:
    """Equal as stored values: 1 and 1.0, or True and 1, are different values to a world."""
    return json.dumps(one, sort_keys=True, default=repr) == json.dumps(
        other, sort_keys=True, default=repr
    )


def classify_restore(outcome: Outcome, what: str, baseline: Any) -> Verdict:
    """A restore's verdict. A drift whose current value is the baseline has been given back: a
    restore repeated after a crash finds its own earlier work in place, whatever the module."""
    verdict = classify_revert(outcome, what)
    if verdict.outcome == "drifted" and same_value(verdict.current, baseline):
        return Verdict("done", note=ALREADY_RESTORED)
    return verdict


@dataclass(frozen=True)
class PerformFailed:
    """Why a perform did not succeed; ``final`` when the module said retrying cannot help."""

    error: str
    final: bool = False


def _parse_perform(outcome: Outcome, what: str) -> PerformDone | PerformFailed:
    if (problem := _unreadable(outcome, what)) is not None or not isinstance(outcome, Returned):
        return PerformFailed(problem or f"{what} did not answer")
    raw = outcome.value
    if isinstance(raw, dict) and raw.get("ok") is True and "resources" in raw:
        try:
            return PerformDone.model_validate(raw, strict=False)
        except ValidationError as error:
            return PerformFailed(f"{what} named a malformed resource: {validation_problem(error)}")
    if (refused := _parse(RevertRefused, raw)) is not None:
        return PerformFailed(made_storable(refused.error), final=True)
    if isinstance(raw, dict) and isinstance(raw.get("error"), str):
        return PerformFailed(made_storable(raw["error"]))
    return PerformFailed(f"{what} answered {_show(raw)}, which is not a perform answer")


parse_perform = _judged(_parse_perform, PerformFailed)
"""The resources a perform named, or a readable reason why it did not succeed."""


def parse_reconcile(outcome: Outcome) -> frozenset[str] | None:
    """The refs a module says are still in force, or None when it did not answer clearly."""
    if not isinstance(outcome, Returned):
        return None
    answer = _parse(ReconcileAnswer, outcome.value)
    return None if answer is None else frozenset(answer.in_force)

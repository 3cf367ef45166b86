from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

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

from application.deadline import Outcome, Raised, TimedOut
from domain.resource import MAX_KIND, MAX_REF

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
    current: JsonValue = None


class RevertRefused(_Answer):
    ok: IsFalse
    retry: IsFalse
    error: str


class NamedResource(BaseModel):
    """A resource a dispatch named: the module's opaque names and what it needs to give it back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(min_length=1, max_length=MAX_KIND)
    ref: str = Field(min_length=1, max_length=MAX_REF)
    payload: dict[str, Any] | None = None
    member_key: str | None = None
    until: AwareDatetime | None = None


class PerformDone(_Answer):
    ok: IsTrue
    resources: list[NamedResource]


class ApplyDone(_Answer):
    ok: IsTrue
    baseline: Any
    applied: Any


class ReconcileAnswer(_Answer):
    ok: IsTrue
    in_force: list[str]


@dataclass(frozen=True)
class Verdict:
    outcome: VerdictKind
    error: str | None = None
    failed: frozenset[str] = field(default_factory=frozenset)
    current: Any = None


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, default=repr)
    except Exception:  # an answer is module code too: even showing it may fail
        text = f"an unprintable {type(value).__name__}"
    return text if len(text) <= 120 else text[:117] + "..."


def _parse(model: type[_Answer], raw: Any) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def classify_revert(outcome: Outcome, what: str) -> Verdict:
    """Read one revert or restore answer so that no shape a failure can take reads as success."""
    if isinstance(outcome, TimedOut):
        return Verdict("retry", f"{what} did not answer within {outcome.seconds:g}s")
    if isinstance(outcome, Raised):
        error = outcome.error
        return Verdict("retry", f"{what} raised {type(error).__name__}: {error}")
    raw = outcome.value
    # A drift is read first: an answer that also says ok must not hide it.
    if (drift := _parse(RevertDrifted, raw)) is not None:
        return Verdict(
            "drifted",
            f"the value is now {_show(drift.current)} rather than what this run applied, "
            "so it was left alone",
            current=drift.current,
        )
    if (done := _parse(RevertDone, raw)) is not None:
        return Verdict("done", failed=frozenset(done.failed))
    if (refused := _parse(RevertRefused, raw)) is not None:
        return Verdict("terminal", refused.error)
    if isinstance(raw, dict) and isinstance(raw.get("error"), str) and raw.get("ok") is False:
        return Verdict("retry", raw["error"])
    return Verdict("retry", f"{what} answered {_show(raw)}, which is not a revert answer")


@dataclass(frozen=True)
class PerformFailed:
    """Why a perform did not succeed; ``final`` when the module said retrying cannot help."""

    error: str
    final: bool = False


def parse_perform(outcome: Outcome, what: str) -> PerformDone | PerformFailed:
    """The resources a perform named, or a readable reason why it did not succeed."""
    if isinstance(outcome, TimedOut):
        return PerformFailed(f"{what} did not answer within {outcome.seconds:g}s")
    if isinstance(outcome, Raised):
        return PerformFailed(f"{what} raised {type(outcome.error).__name__}: {outcome.error}")
    raw = outcome.value
    if isinstance(raw, dict) and raw.get("ok") is True and "resources" in raw:
        try:
            return PerformDone.model_validate(raw, strict=False)
        except ValidationError as error:
            return PerformFailed(
                f"{what} named a malformed resource: {error.errors()[0]['msg']}"
            )
    if (refused := _parse(RevertRefused, raw)) is not None:
        return PerformFailed(refused.error, final=True)
    if isinstance(raw, dict) and isinstance(raw.get("error"), str):
        return PerformFailed(str(raw["error"]))
    return PerformFailed(f"{what} answered {_show(raw)}, which is not a perform answer")


def parse_reconcile(outcome: Outcome) -> frozenset[str] | None:
    """The refs a module says are still in force, or None when it did not answer clearly."""
    if isinstance(outcome, TimedOut | Raised):
        return None
    answer = _parse(ReconcileAnswer, outcome.value)
    return None if answer is None else frozenset(answer.in_force)

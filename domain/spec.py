from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from runledger.domain.values import pattern, storable, storable_text

NAME = pattern(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
    "a letter or digit, then up to 63 letters, digits, '_', '.' or '-'",
)
MAX_WAIT_S = 366 * 86_400  # a wait must stay a time the calendar can hold
# A run's steps are loaded and walked on every tick of its phase: the caps keep that work small.
# They bound what comes in (parse_spec); a run stored before them still loads.
MAX_PHASES = 100
MAX_STEPS = 1_000


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _incoming(check: Any) -> Any:
    """The edge's value rule, for a spec coming in; a spec read back from the store was checked
    when it came in (or by an earlier version's rules), and must always read."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        return value if info.context == STORED else check(value)

    return AfterValidator(validate)


def _a_number(value: Any, info: ValidationInfo) -> Any:
    """A number as JSON writes it: pydantic's lax float reads false as 0 and "5" as 5, which
    the document refuses. A spec read back from the store keeps reading as it always did."""
    if info.context == STORED or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    raise PydanticCustomError("float_type", "Input should be a valid number")


STORED = {"stored": True}
Text = Annotated[str, _incoming(storable_text)]
Seconds = Annotated[float, BeforeValidator(_a_number)]


class StepSpec(_Spec):
    id: str = Field(pattern=NAME)
    action: Text = Field(min_length=1, max_length=128)
    params: Annotated[dict[str, Any], _incoming(storable)] = {}


class PhaseSpec(_Spec):
    """Ordered steps, and when the phase may advance once they are done."""

    id: str = Field(pattern=NAME)
    steps: list[StepSpec] = Field(min_length=1)
    advance: Literal["manual", "auto"] = "auto"
    after_s: Seconds = Field(0, ge=0, le=MAX_WAIT_S)


class RunSpec(_Spec):
    """What a run executes: ordered phases, each a list of steps."""

    name: Text = Field(min_length=1, max_length=200)
    phases: list[PhaseSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> RunSpec:
        _refuse_duplicates("phases", [p.id for p in self.phases])
        _refuse_duplicates("steps", [s.id for p in self.phases for s in p.steps])
        return self

    @classmethod
    def stored(cls, raw: Any) -> RunSpec:
        return cls.model_validate(raw, context=STORED)

    def step(self, step_id: str) -> tuple[int, StepSpec]:
        for index, phase in enumerate(self.phases):
            for step in phase.steps:
                if step.id == step_id:
                    return index, step
        raise KeyError(step_id)


def _refuse_duplicates(what: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise ValueError(f"{what}: the id {item!r} is used twice")
        seen.add(item)

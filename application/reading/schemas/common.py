from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from runledger.domain.values import text_problem

MAX_INT = 2**63 - 1
"""The largest integer either store keeps: a bound on every integer a request may carry."""


def _storable(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


NO_NUL = r"^[^\x00]*$"
SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""What str.strip() takes away (str.isspace), spelt out: regex engines differ on `\\s`."""
SAID = rf"^[{SPACE}]*[^{SPACE}\x00][^\x00]*$"


def _pattern(pattern: str) -> Callable[[dict[str, Any]], None]:
    """The document's pattern for a kind of text, unless the field says a stricter one."""

    def said(schema: dict[str, Any]) -> None:
        schema.setdefault("pattern", pattern)

    return said


StoredText = Annotated[str, AfterValidator(_storable), Field(json_schema_extra=_pattern(NO_NUL))]
"""Text a store can hold and compare: no NUL, no lone surrogates, bounded. The document says
the NUL; the check itself is the store's (domain/values.py), with its own words."""
SaidText = Annotated[str, AfterValidator(_storable), Field(json_schema_extra=_pattern(SAID))]
"""StoredText that says something: not only spaces (a name, a reason)."""


class Answer(BaseModel):
    """A response body. A value stored before values were checked may be a NaN or an infinity:
    it is written as null rather than break the answer."""

    model_config = ConfigDict(ser_json_inf_nan="null", from_attributes=True)


class Ask(BaseModel):
    """A request body: unknown fields are refused, so a misspelt field is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


T = TypeVar("T")


class Page(Answer, Generic[T]):
    """One page of a list, as every list route answers: pass `next_cursor` back as `cursor`."""

    items: list[T]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null on the last page"
    )


class Problem(Answer):
    """Why a request was refused or failed, as RFC 9457 problem details: `detail` says it in
    one sentence."""

    type: str = Field("about:blank", description="about:blank: the status says what went wrong")
    title: str = Field(description="the status's phrase")
    status: int = Field(ge=400, le=599)
    detail: str


class FieldRefused(Answer):
    """One refused field: where it is (`body`, `query`, `path` or `header`, then its keys and
    indexes) and why, in a sentence naming it."""

    loc: list[str | int]
    msg: str
    type: str


class ValidationProblem(Problem):
    """A request refused for what it carried (422): `detail` lists each refused field."""

    status: int = Field(ge=422, le=422)
    detail: list[FieldRefused]  # type: ignore[assignment]


class Message(Answer):
    message: str

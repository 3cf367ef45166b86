"""A run's spec as the OpenAPI document describes it: what an author writes.

A route takes the spec as JSON and hands it to the one parser (services/spec_input.py), which
bounds its size, checks every value and names the field at fault; these models only give the
document its shape. tests/entrypoints/test_api_openapi.py proves they say what the parser accepts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from runledger.application.reading.schemas.common import NO_NUL, Ask
from runledger.domain.spec import MAX_PHASES, MAX_STEPS, MAX_WAIT_S, NAME
from runledger.domain.values import MAX_INT, MAX_TEXT

VALUE = "#/components/schemas/StoredValue"
VALUES = {"patternProperties": {NO_NUL: {"$ref": VALUE}}, "additionalProperties": False}
"""An object of StoredValues, each named by text without NUL."""


def stored_value() -> dict[str, Any]:
    """A JSON value every reader of the store can take (domain/values.py `check_value`): text
    without NUL, integers within 64 bits, finite numbers, and lists and objects of the same
    (nesting and size are bounded too, past what the document says)."""
    text = {"type": "string", "pattern": NO_NUL, "maxLength": MAX_TEXT}
    return {
        "description": stored_value.__doc__,
        "anyOf": [
            text,
            {"type": "integer", "minimum": -MAX_INT, "maximum": MAX_INT},
            {"type": "number", "not": {"type": "integer"}},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "array", "items": {"$ref": VALUE}},
            {"type": "object", **VALUES},
        ],
    }


class StepIn(Ask):
    id: str = Field(pattern=NAME, description="unique in the spec; part of the idempotency key")
    action: str = Field(
        min_length=1,
        max_length=128,
        description="an action a loaded module registers",
        json_schema_extra={"pattern": NO_NUL},
    )
    params: dict[str, Any] = Field(
        {}, description="the action's own parameters, each a StoredValue"
    )


class PhaseIn(Ask):
    id: str = Field(pattern=NAME, description="unique in the spec")
    steps: list[StepIn] = Field(min_length=1, max_length=MAX_STEPS)
    advance: Literal["manual", "auto"] = Field(
        "auto", description="manual: once its steps are done, it waits for a person to advance it"
    )
    after_s: float = Field(
        0, ge=0, le=MAX_WAIT_S, description="auto: seconds to wait after its steps are done"
    )


class SpecIn(Ask):
    """What a run executes: ordered phases, each a list of steps; at most 1 MiB of JSON."""

    name: str = Field(min_length=1, max_length=200, json_schema_extra={"pattern": NO_NUL})
    phases: list[PhaseIn] = Field(min_length=1, max_length=MAX_PHASES)


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` written in place: the document holds it as one value."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    found: dict[str, Any] = resolve(schema)
    return found


def _valued(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each param's value said to be a StoredValue (stored_value)."""
    step = schema["properties"]["phases"]["items"]["properties"]["steps"]["items"]
    step["properties"]["params"] |= VALUES
    return schema


SPEC_SCHEMA = _valued(inlined(SpecIn.model_json_schema()))

Spec = Annotated[dict[str, Any], WithJsonSchema(SPEC_SCHEMA)]
"""A spec body: read as JSON, parsed by the services, documented as SpecIn."""

"""A run's spec as the OpenAPI document describes it: what an author writes.

A route takes the spec as JSON and hands it to the one parser (services/spec_input.py), which
bounds its size, checks every value and names the field at fault; these models only give the
document its shape. tests/entrypoints/test_api_openapi.py proves they say what the parser accepts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from runledger.application.reading.schemas.common import Ask
from runledger.domain.spec import MAX_PHASES, MAX_STEPS, MAX_WAIT_S, NAME


class StepIn(Ask):
    id: str = Field(pattern=NAME, description="unique in the spec; part of the idempotency key")
    action: str = Field(
        min_length=1, max_length=128, description="an action a loaded module registers"
    )
    params: dict[str, Any] = Field({}, description="the action's own parameters")


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

    name: str = Field(min_length=1, max_length=200)
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


SPEC_SCHEMA = inlined(SpecIn.model_json_schema())

Spec = Annotated[dict[str, Any], WithJsonSchema(SPEC_SCHEMA)]
"""A spec body: read as JSON, parsed by the services, documented as SpecIn."""

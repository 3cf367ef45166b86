"""A spec as an author hands it in: bounded in size, parsed, and refused naming the field."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from runledger.application.errors import BadRequest
from runledger.domain.spec import MAX_PHASES, MAX_STEPS, RunSpec
from runledger.domain.values import validation_problem

MAX_SPEC_BYTES = 1 << 20


def parse_spec(document: str | dict[str, Any]) -> RunSpec:
    """A spec document (JSON text or a mapping), or BadRequest naming the field at fault."""
    _refuse_oversized(document)
    try:
        raw = json.loads(document) if isinstance(document, str) else document
        spec = RunSpec.model_validate(raw)
    except json.JSONDecodeError as error:
        raise BadRequest(f"the spec is not valid JSON: {error}") from None
    except ValidationError as error:
        raise BadRequest(validation_problem(error, whole="spec")) from None
    _refuse_too_many(spec)
    return spec


def _refuse_too_many(spec: RunSpec) -> None:
    def most(where: str, count: int, cap: int) -> None:
        if count > cap:
            raise BadRequest(
                f"{where}: List should have at most {cap} items after validation, not {count}"
            )

    most("phases", len(spec.phases), MAX_PHASES)
    for index, phase in enumerate(spec.phases):
        most(f"phases.{index}.steps", len(phase.steps), MAX_STEPS)
    steps = sum(len(phase.steps) for phase in spec.phases)
    if steps > MAX_STEPS:
        raise BadRequest(
            f"phases: a spec may have at most {MAX_STEPS:,} steps in all; this one has {steps:,}"
        )


def _refuse_oversized(document: str | dict[str, Any]) -> None:
    """Refuse a spec over MAX_SPEC_BYTES before any parsing: the size is what it costs."""
    if isinstance(document, str):
        # Every character is at least one byte: a long text is refused without encoding it.
        size = (
            len(document)
            if len(document) > MAX_SPEC_BYTES
            else (len(document.encode("utf-8", "surrogatepass")))
        )
    else:
        try:
            size = len(json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except (TypeError, ValueError, RecursionError):
            return  # not JSON at all: validation names what is wrong with it
    if size > MAX_SPEC_BYTES:
        raise BadRequest(
            f"the spec is {size:,} bytes; at most {MAX_SPEC_BYTES:,} bytes (1 MiB) are accepted"
        )

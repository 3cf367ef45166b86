"""A spec as an author hands it in: bounded in size, parsed, and refused naming the field."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from runledger.application.errors import BadRequest
from runledger.domain.spec import MAX_PHASES, MAX_STEPS, RunSpec
from runledger.domain.values import MAX_DEPTH, validation_problem

MAX_SPEC_BYTES = 1 << 20
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def parse_spec(document: str | dict[str, Any]) -> RunSpec:
    """A spec document (JSON text or a mapping), or BadRequest naming the field at fault."""
    _refuse_oversized(document)
    if isinstance(document, str) and _text_nests_past(document, 2 * MAX_DEPTH):
        raise BadRequest(
            f"the spec nests deeper than {2 * MAX_DEPTH} levels; a value may nest {MAX_DEPTH}"
        )
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
        if _deeper_than(document, 2 * MAX_DEPTH):
            return  # validation names the field nested too deep
        try:
            size = len(json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except (TypeError, ValueError):
            return  # not JSON at all: validation names what is wrong with it
    if size > MAX_SPEC_BYTES:
        raise BadRequest(
            f"the spec is {size:,} bytes; at most {MAX_SPEC_BYTES:,} bytes (1 MiB) are accepted"
        )


def _deeper_than(document: Any, limit: int) -> bool:
    """Whether a value nests past ``limit``, found without recursion. The encoder recurses in C
    up to the interpreter's limit: a collection of garbage on the way ran finalizers with no
    stack left, each failing where nobody could see it (CI once counted five)."""
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((child, depth + 1) for child in item)
    return False


def _text_nests_past(text: str, limit: int) -> bool:
    """Whether JSON text opens more than ``limit`` brackets at once (outside its strings): the
    parser would recurse that deep in C, with the same trouble as _deeper_than."""
    depth = 0
    for found in _BRACKETS.finditer(_STRINGS.sub("", text)):
        depth += 1 if found.group() in "[{" else -1
        if depth > limit:
            return True
    return False

"""What scripts/fuzz_api.py teaches schemathesis (loaded through SCHEMATHESIS_HOOKS): the one
rule of a request the document states in words but no JSON Schema can, that a spec's phase ids
are unique and so are its step ids. A body breaking it is not generated as a valid one.
tests/entrypoints/test_api_fuzz.py filters its cases by the same `unique_ids`."""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    return unique_ids(body)


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """The coverage phase builds its boundary bodies past filter_body (a thousand steps all
    named "0"): their refusal breaks that rule, not the document's, so it is not counted."""
    return failure.code != "ST202" or unique_ids(case.body)


def unique_ids(body: Any) -> bool:
    """False for a spec, or a body holding one, that names a phase or a step twice."""
    spec = body.get("spec", body) if isinstance(body, dict) else None
    return not isinstance(spec, dict) or not _repeats(spec)


def _repeats(spec: dict[str, Any]) -> bool:
    phases = [p for p in _listed(spec.get("phases")) if isinstance(p, dict)]
    steps = [s for p in phases for s in _listed(p.get("steps")) if isinstance(s, dict)]
    return any(_twice([one.get("id") for one in found]) for found in (phases, steps))


def _twice(ids: list[Any]) -> bool:
    named = [i for i in ids if isinstance(i, str)]
    return len(set(named)) != len(named)


def _listed(value: Any) -> list[Any]:
    """A list, or nothing: a body made to be wrong may hold a number where a list goes."""
    return value if isinstance(value, list) else []

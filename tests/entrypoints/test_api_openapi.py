"""The committed openapi.json is what the routes say today, and the spec it documents is the
one the parser accepts."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

from runledger.application.reading.schemas.common import NO_NUL
from runledger.application.reading.schemas.specs import SPEC_SCHEMA, VALUES, inlined
from runledger.domain.spec import MAX_PHASES, MAX_STEPS, RunSpec

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_openapi_document_is_current() -> None:
    document = runpy.run_path(str(ROOT / "scripts" / "openapi.py"))["document"]
    committed = (ROOT / "openapi.json").read_text(encoding="utf-8")
    assert committed == document(), (
        "openapi.json is stale: run `python scripts/openapi.py` and commit the result"
    )


def _shape(schema: Any) -> Any:
    """A schema without its words (titles, descriptions), the caps the parser adds, and what
    the document says of a stored value that the parser checks by its value rule (domain
    values.py): text without NUL, a param's value a StoredValue."""
    if isinstance(schema, dict):
        words = ("title", "description", "maxItems")
        said = {k: v for k, v in schema.items() if k not in words}
        if said.get("pattern") == NO_NUL:
            del said["pattern"]
        if said.get("patternProperties") == VALUES["patternProperties"]:
            del said["patternProperties"]
            said["additionalProperties"] = True
        return {k: _shape(v) for k, v in said.items()}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema


def test_the_documented_spec_is_the_shape_the_parser_accepts() -> None:
    domain = inlined(RunSpec.model_json_schema())
    assert _shape(SPEC_SCHEMA) == _shape(domain)
    phases = SPEC_SCHEMA["properties"]["phases"]
    assert (phases["maxItems"], phases["items"]["properties"]["steps"]["maxItems"]) == (
        MAX_PHASES,
        MAX_STEPS,
    )


def test_a_spec_body_is_documented_where_one_is_taken() -> None:
    document = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))
    body = document["paths"]["/admin/events/runs"]["post"]["requestBody"]
    assert _shape(body["content"]["application/json"]["schema"]) == _shape(SPEC_SCHEMA)
    for name in ("NewDefinition", "Draft"):
        spec = document["components"]["schemas"][name]["properties"]["spec"]
        assert _shape(spec) == _shape(SPEC_SCHEMA), name

"""The OpenAPI document says what the API answers: every refusal is problem details
(`application/problem+json`), a 422 listing the refused fields (FastAPI would document its own
`HTTPValidationError` as `application/json`); every 201 has a `Location`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from runledger.application.api.problems import PROBLEM_JSON
from runledger.application.reading.schemas.common import Problem, ValidationProblem
from runledger.application.reading.schemas.specs import stored_value

SCHEMAS = "#/components/schemas/"
FASTAPIS = ("HTTPValidationError", "ValidationError")
LOCATION = {
    "description": "where what was made is read (a path), on a repeat under its key too",
    "schema": {"type": "string"},
}


def install(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _problems(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _problems(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name in FASTAPIS:
        schemas.pop(name, None)
    _, found = models_json_schema(
        [(Problem, "serialization"), (ValidationProblem, "serialization")],
        ref_template=SCHEMAS + "{model}",
    )
    schemas.update(found.get("$defs", {}))
    schemas["StoredValue"] = stored_value()
    for operation in (op for path in document["paths"].values() for op in path.values()):
        for status, answer in operation.get("responses", {}).items():
            _as_problem(answer.get("content", {}))
            if status == "201":
                answer["headers"] = {"Location": LOCATION}
    return document


def _as_problem(content: dict[str, Any]) -> None:
    """A refusal's body, documented as application/json by FastAPI, under its real type."""
    said = content.get("application/json", {}).get("schema", {}).get("$ref", "")
    if said == SCHEMAS + "HTTPValidationError":
        content.pop("application/json")
        content[PROBLEM_JSON] = {"schema": {"$ref": SCHEMAS + "ValidationProblem"}}
    elif said == SCHEMAS + "Problem":
        content[PROBLEM_JSON] = content.pop("application/json")

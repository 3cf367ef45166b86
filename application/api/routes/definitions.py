"""Definitions (W5): create, read, edit the draft, verify, publish, versions, occurrences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Path, Response

from runledger.application.api.deps import Operator, Viewer
from runledger.application.api.once import Once
from runledger.application.api.paging import Cursor, Limit, window
from runledger.application.api.responses import ACTING, AUTHENTICATED
from runledger.application.deps import DefinitionsDep, OccurrencesDep
from runledger.application.errors import BadRequest, Conflict
from runledger.application.reading import definitions as answer
from runledger.application.reading.schemas import definitions as schema
from runledger.application.reading.schemas.common import Problem
from runledger.domain.occurrence import OccurrenceState
from runledger.domain.spec import NAME

T = TypeVar("T")
UNKNOWN: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such definition, version or occurrence"},
}
Name = Annotated[
    str,
    Path(
        min_length=1,
        max_length=64,
        description="the definition's name",
        json_schema_extra={"pattern": NAME},
    ),
]

router = APIRouter(
    prefix="/admin/definitions", tags=["definitions"], responses=AUTHENTICATED | UNKNOWN | ACTING
)


@router.get("", response_model=schema.DefinitionPage)
def list_definitions(
    definitions: DefinitionsDep, _: Viewer, limit: Limit = 200, cursor: Cursor = None
) -> schema.DefinitionPage:
    """Every definition by name: its draft, last dry run, latest version."""
    at = window(limit, cursor)
    return at.page(definitions.listing(at.reach), answer.summary, schema.DefinitionPage)


@router.post("", response_model=schema.DefinitionDetail, status_code=201)
def create_definition(
    definitions: DefinitionsDep, actor: Operator, once: Once, body: schema.NewDefinition
) -> schema.DefinitionDetail | Response:
    """A new definition whose draft is the spec given, in the caller's name; `Location` is
    its."""
    return once(
        lambda: definitions.create(body.name, body.spec, by=actor.name),
        answer.detail,
        located=lambda made: f"{router.prefix}/{quote(made.name, safe='')}",
    )


@router.get("/{name}", response_model=schema.DefinitionDetail)
def get_definition(definitions: DefinitionsDep, _: Viewer, name: Name) -> schema.DefinitionDetail:
    """The draft, the stamp publishing it now would give, the versions and the dry runs."""
    return answer.detail(definitions.get(name))


@router.put("/{name}/draft", response_model=schema.DraftSaved)
def edit_draft(
    definitions: DefinitionsDep, actor: Operator, name: Name, body: schema.Draft
) -> schema.DraftSaved:
    """Replace the draft. A changed draft is unverified until a dry run passes on it again."""
    edited, changed = definitions.edit(name, body.spec, by=actor.name)
    return answer.draft_saved(edited, changed)


@router.post("/{name}/verify", response_model=schema.Verified)
def verify_definition(
    definitions: DefinitionsDep, actor: Operator, once: Once, name: Name
) -> schema.Verified | Response:
    """A dry run of the draft against the loaded modules, calling nothing that changes a world;
    recorded with its fingerprint, the caller as reviewer and the time, passed or not."""
    return once(lambda: definitions.verify(name, by=actor.name), answer.verified)


@router.post("/{name}/publish", response_model=schema.Published)
def publish_definition(
    definitions: DefinitionsDep, actor: Operator, once: Once, name: Name
) -> schema.Published | Response:
    """Freeze the draft as the next version (verified when the latest passing dry run checked
    this very draft) and re-pin the definition's scheduled occurrences to it."""
    return once(
        lambda: definitions.publish(name, by=actor.name),
        lambda found: answer.published(name, found),
    )


@router.get("/{name}/versions", response_model=schema.VersionPage)
def list_versions(
    definitions: DefinitionsDep, _: Viewer, name: Name, limit: Limit = 200, cursor: Cursor = None
) -> schema.VersionPage:
    """The definition's published versions, oldest first."""
    at = window(limit, cursor)
    found = definitions.get(name).versions
    return at.page(found, answer.version_summary, schema.VersionPage)


@router.get("/{name}/versions/{version}", response_model=schema.VersionDetail)
def get_version(
    definitions: DefinitionsDep,
    _: Viewer,
    name: Name,
    version: Annotated[int, Path(ge=1, le=1_000_000)],
) -> schema.VersionDetail:
    """A published version and its frozen spec."""
    return answer.version_detail(definitions.version(name, version))


@router.get("/{name}/occurrences", response_model=schema.OccurrencePage)
def list_definition_occurrences(
    occurrences: OccurrencesDep,
    _: Viewer,
    name: Name,
    state: OccurrenceState | None = None,
    limit: Limit = 200,
    cursor: Cursor = None,
) -> schema.OccurrencePage:
    """This definition's occurrences in due order."""
    at = window(limit, cursor)
    found = occurrences.listing(name, state, at.reach)
    return at.page(found, answer.occurrence, schema.OccurrencePage)


@router.post("/{name}/occurrences", response_model=schema.Occurrence, status_code=201)
def schedule_occurrence(
    occurrences: OccurrencesDep, actor: Operator, once: Once, name: Name, body: schema.NewOccurrence
) -> schema.Occurrence | Response:
    """Schedule the definition at a time, pinned to its latest version; `Location` is the
    occurrence's."""
    return once(
        lambda: _clock_refusing(lambda: occurrences.schedule(name, body.at, by=actor.name)),
        lambda scheduled: answer.occurrence(occurrences.row(scheduled.id)),
        located=lambda made: f"/admin/occurrences/{made.occurrence_id}",
    )


def _clock_refusing(act: Callable[[], T]) -> T:
    """A time the clock refuses (past, or over ten years ahead) is the state of things refusing
    a well-formed request, 409: no schema can say "after now"."""
    try:
        return act()
    except BadRequest as error:
        if isinstance(error, Conflict) or not str(error).startswith("at: "):
            raise
        raise Conflict(str(error)) from None

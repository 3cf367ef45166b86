"""Occurrences of every definition: list, read, cancel."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Response

from runledger.application.api.deps import Operator, Viewer
from runledger.application.api.once import Once
from runledger.application.api.paging import Cursor, Limit, window
from runledger.application.api.responses import ACTING, AUTHENTICATED
from runledger.application.api.routes.definitions import UNKNOWN
from runledger.application.deps import OccurrencesDep
from runledger.application.reading import definitions as answer
from runledger.application.reading.schemas import definitions as schema
from runledger.domain.occurrence import OccurrenceState
from runledger.domain.spec import NAME

router = APIRouter(
    prefix="/admin/occurrences", tags=["definitions"], responses=AUTHENTICATED | UNKNOWN | ACTING
)


@router.get("", response_model=schema.OccurrencePage)
def list_occurrences(
    occurrences: OccurrencesDep,
    _: Viewer,
    definition: Annotated[
        str | None, Query(min_length=1, max_length=64, json_schema_extra={"pattern": NAME})
    ] = None,
    state: OccurrenceState | None = None,
    limit: Limit = 200,
    cursor: Cursor = None,
) -> schema.OccurrencePage:
    """Occurrences in due order, of one definition or all."""
    at = window(limit, cursor)
    found = occurrences.listing(definition, state, at.reach)
    return at.page(found, answer.occurrence, schema.OccurrencePage)


@router.get("/{occurrence_id}", response_model=schema.Occurrence)
def get_occurrence(
    occurrences: OccurrencesDep, _: Viewer, occurrence_id: UUID
) -> schema.Occurrence:
    return answer.occurrence(occurrences.row(occurrence_id))


@router.post("/{occurrence_id}/cancel", response_model=schema.Occurrence)
def cancel_occurrence(
    occurrences: OccurrencesDep, actor: Operator, once: Once, occurrence_id: UUID
) -> schema.Occurrence | Response:
    """Cancel an occurrence still waiting to start, in the caller's name."""
    return once(
        lambda: occurrences.cancel(occurrence_id, by=actor.name),
        lambda _: answer.occurrence(occurrences.row(occurrence_id)),
    )

"""The definitions (W5) pages: every definition with its draft's state, latest version and next
occurrence; one definition with its draft, the diff against its latest version, its versions,
dry runs and occurrences; and every occurrence. Acting on them: definition_actions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import DefinitionsDep, OccurrencesDep
from runledger.application.reading import definitions as answer
from runledger.application.services.definitions import MAX_LISTED
from runledger.application.web.render import choice, page
from runledger.application.web.routes import definition_actions, draft
from runledger.application.web.routes.definition_actions import shown_page
from runledger.application.web.routes.definition_acts import LABELS, outcome_of
from runledger.application.web.routes.definition_view import (
    SHORT,
    CatalogueDep,
    found,
    next_occurrences,
)
from runledger.application.web.session import Reader
from runledger.application.words import OCCURRENCE
from runledger.domain.occurrence import OccurrenceState

router = APIRouter(include_in_schema=False)
router.include_router(definition_actions.router)
router.include_router(draft.router)
Key = Annotated[str, Path(min_length=1, max_length=100, description="a name or an id")]


def _htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


@router.get("/definitions", response_class=HTMLResponse)
def definitions_page(
    request: Request, definitions: DefinitionsDep, occurrences: OccurrencesDep, actor: Reader
) -> HTMLResponse:
    summaries = [answer.summary(row) for row in definitions.listing(MAX_LISTED)]
    return page(
        request,
        "definitions_table.html" if _htmx(request) else "definitions.html",
        actor,
        definitions=summaries,
        upcoming=next_occurrences(occurrences, summaries),
        SHORT=SHORT,
    )


@router.get("/definitions/{key}", response_model=None)
def definition_page(request: Request, catalogue: CatalogueDep, actor: Reader, key: Key) -> Response:
    definition = found(catalogue.definitions, key)
    if definition.name != key:  # by id: the page's own address is its name
        return RedirectResponse(f"/definitions/{definition.name}", status_code=303)
    where = f"/definitions/{definition.name}"
    outcome = outcome_of(request, where)
    return shown_page(request, catalogue, actor, "definition.html", definition.name, outcome)


@router.get("/definitions/{key}/occurrences", response_model=None)
def definition_occurrences(
    request: Request,
    definitions: DefinitionsDep,
    occurrences: OccurrencesDep,
    actor: Reader,
    key: Key,
) -> Response:
    """The definition page's occurrences, for its poll."""
    name = found(definitions, key).name
    if not _htmx(request):
        return RedirectResponse(f"/definitions/{name}#occurrences-h", status_code=303)
    return page(
        request,
        "occurrences_table.html",
        actor,
        occurrences=[answer.occurrence(row) for row in occurrences.listing(name)],
        poll=f"/definitions/{name}/occurrences",
        one=True,
        inline=True,
        OCCURRENCE=OCCURRENCE,
        MAX_LISTED=MAX_LISTED,
    )


@router.get("/occurrences", response_class=HTMLResponse)
def occurrences_page(
    request: Request,
    definitions: DefinitionsDep,
    occurrences: OccurrencesDep,
    actor: Reader,
    definition: Annotated[str, Query(max_length=100)] = "",
    state: Annotated[str, Query(max_length=40)] = "",
) -> HTMLResponse:
    """Every occurrence in due order; of one definition (its page polls this) or in one state."""
    picked = choice("state", state, OccurrenceState)
    name = found(definitions, definition).name if definition else None
    rows = occurrences.listing(name, picked, MAX_LISTED)
    return page(
        request,
        "occurrences_table.html" if _htmx(request) else "occurrences.html",
        actor,
        occurrences=[answer.occurrence(row) for row in rows],
        poll=_here(request),
        definition=name or "",
        state=state,
        one=name is not None,
        OCCURRENCE=OCCURRENCE,
        LABELS=LABELS,
        SHORT=SHORT,
        MAX_LISTED=MAX_LISTED,
    )


def _here(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")

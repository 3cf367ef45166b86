"""Acting on a definition from its page: a confirmation that says what will happen, then the
action in the signed-in person's name. Without JavaScript: a confirm page, a POST, a 303 back to
the definition with the outcome. With htmx: the confirmation inline, and the POST answers the
definition's page body with the outcome on it.

A refusal changes nothing and says why: a time the schedule refuses is shown on its confirmation
(422, naming the field `at`, with the time picker again); a state that refuses is 409 on the
definition's page. htmx does not swap an error answer, so to htmx refusals come as 200."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import OccurrencesDep
from runledger.application.errors import BadRequest, Conflict
from runledger.application.reading import definitions as answer
from runledger.application.services.occurrences import MAX_LISTED
from runledger.application.services.tokens import Actor
from runledger.application.web.render import page
from runledger.application.web.routes import definition_acts as acts
from runledger.application.web.routes.definition_acts import LABELS, Act, Outcome
from runledger.application.web.routes.definition_view import (
    SHORT,
    Catalogue,
    CatalogueDep,
    found,
    shown,
)
from runledger.application.web.session import Acting, Reader, Refused
from runledger.application.words import OCCURRENCE
from runledger.domain.errors import DomainError
from runledger.domain.text import safe_text
from runledger.domain.token import a_role, may

router = APIRouter(include_in_schema=False)
Name = Annotated[str, Path(min_length=1, max_length=100)]
At = Annotated[str, Query(max_length=64)]
AtForm = Annotated[str, Form(max_length=64)]


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


def operator(actor: Actor) -> None:
    if not may(actor.role, "operator"):
        raise Refused(
            403,
            f"{actor.name} signed in as {a_role(actor.role)}: only operators act on definitions.",
        )


def shown_page(
    request: Request,
    catalogue: Catalogue,
    actor: Actor,
    template: str,
    name: str,
    outcome: Outcome | None,
    code: int = 200,
) -> HTMLResponse:
    """The definition's page (or its body, for htmx) with an outcome above its parts."""
    return page(
        request,
        template,
        actor,
        code,
        shown=shown(catalogue.occurrences, found(catalogue.definitions, name)),
        outcome=outcome,
        LABELS=LABELS,
        OCCURRENCE=OCCURRENCE,
        SHORT=SHORT,
        one=True,
        MAX_LISTED=MAX_LISTED,
        picked=catalogue.now.strftime("%Y-%m-%dT%H:%M"),
    )


@router.get("/definitions/{name}/confirm/{act}", response_class=HTMLResponse)
def confirm(
    request: Request, catalogue: CatalogueDep, actor: Reader, name: Name, act: Act, at: At = ""
) -> HTMLResponse:
    operator(actor)
    definition = found(catalogue.definitions, name)
    if act != "schedule":
        return confirmation(request, catalogue, actor, definition.name, act)
    try:
        when = acts.moment(at)
    except BadRequest as error:
        return confirmation(request, catalogue, actor, definition.name, act, str(error), at)
    return confirmation(request, catalogue, actor, definition.name, act, at=at, when=when)


def confirmation(
    request: Request,
    catalogue: Catalogue,
    actor: Actor,
    name: str,
    act: str,
    refused: str | None = None,
    at: str = "",
    when: datetime | None = None,
) -> HTMLResponse:
    """The confirmation of ``act``; with ``refused``, the time picker again and why (422)."""
    inline = is_htmx(request)
    definition = found(catalogue.definitions, name)
    foreseen = (
        None if refused else acts.foresee(catalogue.occurrences, definition, act, actor.name, when)
    )
    answer_ = page(
        request,
        "definition_confirm.html" if inline else "definition_confirm_page.html",
        actor,
        200 if inline or refused is None else 422,
        name=definition.name,
        action=act,
        label=LABELS[act],
        foreseen=foreseen,
        refused=None if refused is None else safe_text(refused, 1_000),
        at=at,
        picked=at[:19] or catalogue.now.strftime("%Y-%m-%dT%H:%M"),
        post=f"/definitions/{definition.name}/confirm/{act}",
    )
    if inline and refused:
        answer_.headers.update({"HX-Retarget": "#confirm", "HX-Reswap": "innerHTML"})
    return answer_


@router.post("/definitions/{name}/confirm/{act}", response_model=None)
def act(
    request: Request,
    catalogue: CatalogueDep,
    actor: Acting,
    name: Name,
    act: Act,
    at: AtForm = "",
) -> Response:
    definitions, occurrences = catalogue.definitions, catalogue.occurrences
    definition = found(definitions, name)
    try:
        if act == "verify":
            outcome = acts.verify(definitions, definition.name, actor.name)
        elif act == "publish":
            outcome = acts.publish(definitions, definition.name, actor.name)
        else:
            outcome = acts.schedule(occurrences, definition.name, actor.name, acts.moment(at))
    except BadRequest as error:
        if act == "schedule" and not isinstance(error, Conflict):
            return confirmation(request, catalogue, actor, definition.name, act, str(error), at)
        return refusal(request, catalogue, actor, definition.name, error)
    except DomainError as error:
        return refusal(request, catalogue, actor, definition.name, error)
    return done(request, catalogue, actor, definition.name, outcome)


@router.get("/occurrences/{occurrence_id}/confirm/cancel", response_class=HTMLResponse)
def confirm_cancel(
    request: Request, occurrences: OccurrencesDep, actor: Reader, occurrence_id: UUID
) -> HTMLResponse:
    operator(actor)
    occurrence = answer.occurrence(occurrences.row(occurrence_id))
    return page(
        request,
        "definition_confirm.html" if is_htmx(request) else "definition_confirm_page.html",
        actor,
        name=occurrence.definition,
        action="cancel",
        label=LABELS["cancel"],
        foreseen=acts.foresee_cancel(occurrence, actor.name),
        refused=None,
        at="",
        post=f"/occurrences/{occurrence_id}/confirm/cancel",
    )


@router.post("/occurrences/{occurrence_id}/confirm/cancel", response_model=None)
def cancel(
    request: Request, catalogue: CatalogueDep, actor: Acting, occurrence_id: UUID
) -> Response:
    name = catalogue.occurrences.row(occurrence_id).definition
    try:
        outcome = acts.cancel(catalogue.occurrences, occurrence_id, actor.name)
    except (DomainError, BadRequest) as error:
        return refusal(request, catalogue, actor, name, error)
    return done(request, catalogue, actor, name, outcome)


def done(
    request: Request, catalogue: Catalogue, actor: Actor, name: str, outcome: Outcome
) -> Response:
    if is_htmx(request):
        return shown_page(request, catalogue, actor, "definition_body.html", name, outcome)
    acts.keep_outcome(request, f"/definitions/{name}", outcome)
    return RedirectResponse(f"/definitions/{name}", status_code=303)


def refusal(
    request: Request, catalogue: Catalogue, actor: Actor, name: str, error: Exception
) -> Response:
    """Nothing was done: say why on the definition's page."""
    said = f"Refused, nothing was changed: {safe_text(str(error), 1_000)}"
    inline = is_htmx(request)
    code = 200 if inline else 409 if isinstance(error, DomainError | Conflict) else 422
    template = "definition_body.html" if inline else "definition.html"
    return shown_page(request, catalogue, actor, template, name, Outcome(said, "refused"), code)

"""Editing a definition's draft in the browser: its spec as JSON in a text area. A spec the
service refuses comes back on the form with the sentence naming the field, and what was typed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import DefinitionsDep
from runledger.application.errors import BadRequest
from runledger.application.services.spec_input import MAX_SPEC_BYTES
from runledger.application.services.tokens import Actor
from runledger.application.web.render import as_typed, page
from runledger.application.web.routes.definition_actions import operator
from runledger.application.web.routes.definition_acts import Outcome, keep_outcome
from runledger.application.web.routes.definition_view import SHORT, canonical, found
from runledger.application.web.session import Acting, Reader
from runledger.domain.definition import Definition
from runledger.domain.errors import DomainError
from runledger.domain.text import safe_text

router = APIRouter(include_in_schema=False)
Name = Annotated[str, Path(min_length=1, max_length=100)]
Spec = Annotated[str, Form(max_length=MAX_SPEC_BYTES)]
Revision = Annotated[int, Form(ge=1)]


@router.get("/definitions/{name}/draft", response_class=HTMLResponse)
def draft_page(
    request: Request, definitions: DefinitionsDep, actor: Reader, name: Name
) -> HTMLResponse:
    operator(actor)
    definition = found(definitions, name)
    return editor(request, actor, definition, canonical(definition.draft))


def editor(
    request: Request,
    actor: Actor,
    definition: Definition,
    text: str,
    refused: str | None = None,
    code: int = 200,
) -> HTMLResponse:
    return page(
        request,
        "definition_draft.html",
        actor,
        code,
        definition=definition,
        text=as_typed(text),
        refused=None if refused is None else safe_text(refused, 2_000),
        SHORT=SHORT,
    )


@router.post("/definitions/{name}/draft", response_model=None)
def save_draft(
    request: Request,
    definitions: DefinitionsDep,
    actor: Acting,
    name: Name,
    spec: Spec,
    revision: Revision,
) -> Response:
    definition = found(definitions, name)
    try:
        current = definitions.get(definition.name)
        if current.revision != revision:
            return editor(request, actor, current, spec, _moved(current, revision), 409)
        edited, changed = definitions.edit(definition.name, spec, by=actor.name)
    except (BadRequest, DomainError) as error:
        return editor(request, actor, definition, spec, str(error), 422)
    if changed:
        said = (
            f"Draft edited by {actor.name}: revision {edited.revision}, fingerprint "
            f"{edited.fingerprint[:SHORT]}. It is unverified until a dry run passes on it."
        )
    else:
        said = "The draft was already this spec: nothing was recorded, its stamp is unchanged."
    where = f"/definitions/{edited.name}"
    keep_outcome(request, where, Outcome(said))
    return RedirectResponse(where, status_code=303)


def _moved(current: Definition, revision: int) -> str:
    return (
        f"revision: the draft changed since you opened it (you edited revision {revision}; it "
        f"is now revision {current.revision}, by {current.edited_by}). Nothing was saved; your "
        "text is below. Open the draft again to start from the new one."
    )

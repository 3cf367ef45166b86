"""Creating a definition in the browser: its name, and its spec pasted as JSON or chosen as a
file. The service refuses what the API refuses, in the same sentence naming the field; the form
then comes back with that sentence and what was typed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import DefinitionsDep
from runledger.application.errors import BadRequest, Conflict
from runledger.application.services.spec_input import MAX_SPEC_BYTES
from runledger.application.services.tokens import Actor
from runledger.application.web.render import as_typed, page
from runledger.application.web.routes.definition_actions import operator
from runledger.application.web.routes.definition_acts import Outcome, keep_outcome
from runledger.application.web.session import Acting, Reader
from runledger.domain.errors import DomainError
from runledger.domain.text import safe_text

router = APIRouter(include_in_schema=False)
PATH = "/new-definition"
"""Not under /definitions/: a definition may be named "new"."""
Name = Annotated[str, Form(max_length=200)]
Spec = Annotated[str, Form(max_length=MAX_SPEC_BYTES)]
Upload = Annotated[UploadFile | None, File()]


@router.get(PATH, response_class=HTMLResponse)
def new_definition_page(request: Request, actor: Reader) -> HTMLResponse:
    operator(actor)
    return form(request, actor, "", "")


@router.post(PATH, response_model=None)
def create_definition(
    request: Request,
    definitions: DefinitionsDep,
    actor: Acting,
    name: Name = "",
    spec: Spec = "",
    file: Upload = None,
) -> Response:
    try:
        text = _chosen(spec, file)
        created = definitions.create(name, text, by=actor.name)
    except Conflict as error:
        return form(request, actor, name, spec, str(error), 409)
    except (BadRequest, DomainError) as error:
        return form(request, actor, name, spec, str(error), 422)
    where = f"/definitions/{created.name}"
    said = (
        f"Definition {created.name} created by {actor.name}: its draft is revision "
        f"{created.revision}, unverified until a dry run passes on it."
    )
    keep_outcome(request, where, Outcome(said))
    return RedirectResponse(where, status_code=303)


def _chosen(pasted: str, file: UploadFile | None) -> str:
    """The spec's text: the chosen file's when one was chosen, else what was pasted."""
    if file is None or not file.filename:
        if not pasted.strip():
            raise BadRequest("spec: paste the spec as JSON, or choose a file holding it")
        return pasted
    data = file.file.read(MAX_SPEC_BYTES + 1)
    if len(data) > MAX_SPEC_BYTES:
        raise BadRequest(f"file: at most {MAX_SPEC_BYTES:,} bytes (1 MiB) are accepted")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest(
            f"file: {safe_text(file.filename, 120)} is not UTF-8 text (byte {error.start})"
        ) from None


def form(
    request: Request,
    actor: Actor,
    name: str,
    text: str,
    refused: str | None = None,
    code: int = 200,
) -> HTMLResponse:
    return page(
        request,
        "definition_new.html",
        actor,
        code,
        name=name,
        text=as_typed(text),
        refused=None if refused is None else safe_text(refused, 2_000),
        max_bytes=MAX_SPEC_BYTES,
    )

"""Acting on a run from its page: a confirmation that says what will happen, then the action in
the signed-in person's name. Without JavaScript: a confirm page, a POST, a 303 back to the run
with the outcome. With htmx: the confirmation inline, and the POST answers the run's live parts.

A refusal changes nothing and says why: 409 (422 for a bad reason) as a page. htmx does not swap
an error answer, so to htmx the same refusal comes as 200 with the message in place."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import AnswersDep, HoldsDep, LedgerDep
from runledger.application.errors import BadRequest
from runledger.application.services.tokens import Actor
from runledger.application.web.render import page
from runledger.application.web.routes.acts import (
    LABELS,
    Action,
    Before,
    Doing,
    DoingDep,
    Outcome,
    foresee,
    keep_outcome,
    perform,
    refusal_code,
)
from runledger.application.web.routes.run_view import live
from runledger.application.web.session import Acting, Reader, Refused
from runledger.domain.errors import DomainError
from runledger.domain.text import safe_text
from runledger.domain.token import a_role, may
from runledger.domain.values import UnsafeValue

router = APIRouter(include_in_schema=False)
Reason = Annotated[str, Form(max_length=10_000)]


def is_htmx(request: Request) -> bool:
    return request.headers.get("HX-Request") == "true"


@router.get("/runs/{run_id}/confirm/{action}", response_class=HTMLResponse)
def confirm(
    request: Request,
    answers: AnswersDep,
    ledger: LedgerDep,
    holds: HoldsDep,
    actor: Reader,
    run_id: UUID,
    action: Action,
) -> HTMLResponse:
    if not may(actor.role, "operator"):
        raise Refused(
            403, f"{actor.name} signed in as {a_role(actor.role)}: only operators act on runs."
        )
    return confirmation(request, actor, Before.read(answers, ledger, holds, run_id), action)


def confirmation(
    request: Request,
    actor: Actor,
    before: Before,
    action: str,
    code: int = 200,
    refused: str | None = None,
    reason: str = "",
) -> HTMLResponse:
    inline = is_htmx(request)
    answer = page(
        request,
        "run_confirm.html" if inline else "run_confirm_page.html",
        actor,
        200 if inline else code,
        run=before.run,
        action=action,
        label=LABELS[action],
        foreseen=foresee(before, action, actor.name),
        refused=refused,
        reason=reason,
    )
    if inline and refused:
        answer.headers.update({"HX-Retarget": "#confirm", "HX-Reswap": "innerHTML"})
    return answer


@router.post("/runs/{run_id}/confirm/{action}", response_model=None)
def act(
    request: Request,
    doing: DoingDep,
    actor: Acting,
    run_id: UUID,
    action: Action,
    reason: Reason = "",
) -> Response:
    try:
        said = perform(doing, action, run_id, actor.name, reason)
    except (DomainError, BadRequest) as error:
        return refusal(request, doing, actor, run_id, action, error, reason)
    if is_htmx(request):
        shown = live(doing.answers, run_id, actor)
        return page(request, "run_acted.html", actor, outcome=Outcome(said), **shown)
    keep_outcome(request, run_id, said)
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


def refusal(
    request: Request,
    doing: Doing,
    actor: Actor,
    run_id: UUID,
    action: str,
    error: Exception,
    reason: str,
) -> Response:
    """Nothing was done: say why, on the confirmation when the reason was refused (keeping what
    was typed), else on the run page."""
    said = safe_text(str(error), 1_000)
    if isinstance(error, UnsafeValue) and error.where == "reason":
        return confirmation(request, actor, doing.before(run_id), action, 422, said, reason)
    outcome = Outcome(f"Refused, nothing was changed: {said}", refused=True)
    template, code = (
        ("run_acted.html", 200) if is_htmx(request) else ("run.html", refusal_code(error))
    )
    shown = live(doing.answers, run_id, actor)
    return page(request, template, actor, code, outcome=outcome, **shown)

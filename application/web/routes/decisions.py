"""Deciding about an ended run's unresolved entries from the console: keep one, retry one (from
the entry's page or its group on the run's page), keep what is left (from the run's page). Each
is a confirmation page that says exactly what will happen and asks the reason, then a POST in the
signed-in person's name and a 303 back to the page the person came from (the entry's, or the
run's for its groups and for what is left) with what came of it.

A refusal changes nothing and says why on the confirmation: 409 when the state of things
refuses it, 422 when what was sent is refused (the reason typed is kept)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import AnswersDep, DecisionsDep, HoldsDep
from runledger.application.errors import BadRequest, NotFound
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import Entry
from runledger.application.services.holds import Holds
from runledger.application.services.tokens import Actor
from runledger.application.web.render import env, page
from runledger.application.web.routes import deciding
from runledger.application.web.routes.acts import keep_outcome, refusal_code
from runledger.application.web.session import Acting, Reader, Refused
from runledger.domain.errors import DomainError
from runledger.domain.fate import UNRESOLVED
from runledger.domain.run import ended
from runledger.domain.text import safe_text
from runledger.domain.token import may
from runledger.projections.rows import EntryRow, RunRow

router = APIRouter(include_in_schema=False)
Reason = Annotated[str, Form(max_length=10_000)]
Back = Literal["entry", "run"]
"""The page a decision about one entry lands on: the entry's, or the run's (from its groups)."""
BackTo = Annotated[Back, Query()]
Act = Literal["keep", "retry"]
"""What a person may decide about one entry."""
env.globals["DECIDABLE"] = UNRESOLVED  # the states decide_*.html offer to keep or retry


def operators_only(actor: Actor) -> None:
    if not may(actor.role, "operator"):
        raise Refused(
            403,
            f"{actor.name} signed in with the {actor.role} role: only operators and admins "
            "keep or retry entries; nothing was done.",
        )


@router.get("/runs/{run_id}/decide")
def decide(
    answers: AnswersDep,
    actor: Reader,
    run_id: UUID,
    entry: Annotated[UUID, Query()],
    act: Annotated[Act, Query()],
) -> RedirectResponse:
    """A group's form on the run's page: the chosen entry's confirmation."""
    operators_only(actor)
    if answers.known_entry(entry).run_id != run_id:
        raise NotFound(f"run {run_id} has no entry {entry}")
    return RedirectResponse(f"/entries/{entry}/{act}?back=run", status_code=303)


@router.get("/entries/{entry_id}/{act}", response_class=HTMLResponse)
def confirm(
    request: Request,
    answers: AnswersDep,
    holds: HoldsDep,
    actor: Reader,
    entry_id: UUID,
    act: Act,
    back: BackTo = "entry",
) -> HTMLResponse:
    operators_only(actor)
    return _entry_confirmation(request, answers, holds, actor, entry_id, act, back)


@router.post("/entries/{entry_id}/{act}", response_model=None)
def decide_entry(
    request: Request,
    decider: DecisionsDep,
    answers: AnswersDep,
    holds: HoldsDep,
    actor: Acting,
    entry_id: UUID,
    act: Act,
    reason: Reason = "",
    back: Annotated[Back, Form()] = "entry",
) -> Response:
    """Keep or retry one entry in the actor's name; a refusal shows the confirmation again."""
    run_id = answers.known_entry(entry_id).run_id
    decide = deciding.keep if act == "keep" else deciding.retry
    return _done(
        request,
        (run_id, "runs") if back == "run" else (entry_id, "entries"),
        lambda: decide(decider, answers, entry_id, actor.name, reason),
        lambda code, said: _entry_confirmation(
            request, answers, holds, actor, entry_id, act, back, code, said, reason
        ),
    )


@router.get("/runs/{run_id}/keep-rest", response_class=HTMLResponse)
def confirm_keep_rest(
    request: Request, answers: AnswersDep, actor: Reader, run_id: UUID
) -> HTMLResponse:
    operators_only(actor)
    return _rest_confirmation(request, answers, actor, run_id)


@router.post("/runs/{run_id}/keep-rest", response_model=None)
def keep_rest(
    request: Request,
    decider: DecisionsDep,
    answers: AnswersDep,
    actor: Acting,
    run_id: UUID,
    reason: Reason = "",
) -> Response:
    answers.known_run(run_id)
    return _done(
        request,
        (run_id, "runs"),
        lambda: deciding.keep_rest(decider, answers, run_id, actor.name, reason),
        lambda code, said: _rest_confirmation(request, answers, actor, run_id, code, said, reason),
    )


def _done(
    request: Request,
    landing: tuple[UUID, Literal["runs", "entries"]],
    act: Callable[[], str],
    again: Callable[[int, str], HTMLResponse],
) -> Response:
    """Do it, then show the page it lands on with what came of it; or the confirmation again,
    saying why nothing was done."""
    try:
        said = act()
    except (DomainError, BadRequest) as error:
        return again(
            refusal_code(error), f"Refused, nothing was changed: {safe_text(str(error), 1_000)}"
        )
    page_id, pages = landing
    keep_outcome(request, page_id, said)
    return RedirectResponse(f"/{pages}/{page_id}", status_code=303)


def _entry_confirmation(
    request: Request,
    answers: Answers,
    holds: Holds,
    actor: Actor,
    entry_id: UUID,
    act: Act,
    back: Back,
    code: int = 200,
    refused: str | None = None,
    reason: str = "",
) -> HTMLResponse:
    entry = answers.known_entry(entry_id)
    run = answers.known_run(entry.run_id)
    asked = (
        deciding.foresee_keep(run, entry, actor.name)
        if act == "keep"
        else deciding.foresee_retry(answers, holds, run, entry, actor.name)
    )
    shown = Shown(act, asked, run, f"/entries/{entry_id}/{act}", entry=entry, back=back)
    return _confirmation(request, actor, shown, code, refused, reason)


def _rest_confirmation(
    request: Request,
    answers: Answers,
    actor: Actor,
    run_id: UUID,
    code: int = 200,
    refused: str | None = None,
    reason: str = "",
) -> HTMLResponse:
    run = answers.known_run(run_id)
    left = answers.queries.unresolved_entries(run_id) if ended(run.status) else []
    asked = deciding.foresee_keep_rest(run, left, actor.name)
    shown = Shown("keep_rest", asked, run, f"/runs/{run_id}/keep-rest", left=left)
    return _confirmation(request, actor, shown, code, refused, reason)


@dataclass(frozen=True)
class Shown:
    """What a confirmation page shows: the act, what it will do, and what it is about."""

    act: deciding.Act
    asked: deciding.Asked
    run: RunRow
    target: str
    entry: Entry | None = None
    left: list[EntryRow] = field(default_factory=list)
    back: Back = "run"


def _confirmation(
    request: Request,
    actor: Actor,
    shown: Shown,
    code: int,
    refused: str | None,
    reason: str,
) -> HTMLResponse:
    return page(
        request,
        "decide_confirm.html",
        actor,
        code,
        shown=shown,
        label=deciding.LABELS[shown.act],
        yes=deciding.YES[shown.act],
        refused=refused,
        reason=reason,
    )

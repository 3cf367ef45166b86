"""The bulk cleanup page: the filters the API's plan takes, the plan they make (each run, each
entry and what it would be asked, and the lease entries left alone because another live run
holds their target), and applying exactly that plan behind a confirmation that carries its
fingerprint. A plan gone stale is said so (409), with the selection as it is now beside it."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from runledger.application.deps import AnswersDep, BulkDep
from runledger.application.errors import Conflict
from runledger.application.reading import shapes
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas import bulk
from runledger.application.reading.schemas.runs import CleanupSummary
from runledger.application.services.bulk import Bulk
from runledger.application.services.tokens import Actor
from runledger.application.web.render import page
from runledger.application.web.routes.bulk_form import (
    CLEANUP_STATUSES,
    RUN_STATUSES,
    Filters,
    filters,
    foreseen,
)
from runledger.application.web.session import Acting, Reader
from runledger.application.words import STATE, cleanup_word
from runledger.domain.text import safe_text

router = APIRouter(include_in_schema=False)
PATH = "/cleanup"
Typed = Annotated[str, Form(max_length=400)]
Fingerprint = Annotated[str, Form(min_length=1, max_length=64)]


@router.get(PATH, response_class=HTMLResponse)
def cleanup_page(
    request: Request,
    selection: BulkDep,
    actor: Reader,
    confirm: Annotated[str, Query(max_length=64)] = "",
) -> HTMLResponse:
    """The filters; with ``plan`` in the query, the plan they make; with ``confirm``, what
    applying the plan of that fingerprint will do."""
    shown = filters(request.query_params)
    plan = _plan(selection, shown) if "plan" in request.query_params or confirm else None
    return _page(request, actor, shown, plan, confirm=confirm, outcome=_outcome_of(request))


@router.post(f"{PATH}/apply", response_model=None)
def apply_plan(
    request: Request,
    selection: BulkDep,
    answers: AnswersDep,
    actor: Acting,
    fingerprint: Fingerprint,
    module: Typed = "",
    action: Typed = "",
    run_status: Typed = "",
    cleanup_status: Typed = "",
    ended_after: Typed = "",
    ended_before: Typed = "",
) -> Response:
    typed = {
        "module": module,
        "action": action,
        "run_status": run_status,
        "cleanup_status": cleanup_status,
        "ended_after": ended_after,
        "ended_before": ended_before,
    }
    shown = filters(typed)
    try:
        done = selection.apply(shapes.where(shown.selector), fingerprint, actor.name)
    except Conflict as error:
        now = _plan(selection, shown)
        return _page(request, actor, shown, now, stale=str(error), code=409)
    summaries = [answers.cleanup_summary(run_id, s) for run_id, s in done.items()]
    said = _applied(answers, fingerprint, actor, summaries)
    request.session["bulk_outcome"] = safe_text(said, 2_000)
    return RedirectResponse(f"{PATH}?{urlencode(shown.query | {'plan': '1'})}", status_code=303)


def _plan(selection: Bulk, shown: Filters) -> bulk.Plan:
    return shapes.plan(shown.selector, selection.plan(shapes.where(shown.selector)))


def _page(
    request: Request,
    actor: Actor,
    shown: Filters,
    plan: bulk.Plan | None,
    *,
    confirm: str = "",
    stale: str | None = None,
    outcome: str | None = None,
    code: int = 200,
) -> HTMLResponse:
    if confirm and plan is not None and plan.fingerprint != confirm:
        stale = (
            f"The plan {confirm[:12]} is stale: the selection is now {plan.fingerprint[:12]} "
            f"({len(plan.runs)} run{'' if len(plan.runs) == 1 else 's'}). Nothing was done; "
            "read the plan below and apply it if it is still what you want."
        )
    confirming = bool(confirm) and stale is None and plan is not None
    return page(
        request,
        "bulk.html",
        actor,
        code,
        typed=shown.typed,
        query=shown.query,
        plan=plan,
        stale=None if stale is None else safe_text(stale, 2_000),
        outcome=outcome,
        confirming=confirming,
        foreseen=foreseen(plan, actor.name) if confirming and plan is not None else "",
        RUN_STATUSES=RUN_STATUSES,
        CLEANUP_STATUSES=CLEANUP_STATUSES,
    )


def _applied(answers: Answers, fingerprint: str, actor: Actor, done: list[CleanupSummary]) -> str:
    """What came of applying the plan, one clause a run."""
    ids = [s.run_id for s in done]
    rows = answers.queries.runs(ids, answers.clock(), answers.max_attempts)
    names = {row.run_id: row.name for row in rows}
    runs = "1 run" if len(done) == 1 else f"{len(done):,} runs"
    said = [f"Plan {fingerprint[:12]} applied by {actor.name}: {runs} asked again."]
    for s in done:
        cleanup = cleanup_word("ended", s.cleanup_status).said
        said.append(
            f"{names.get(s.run_id, str(s.run_id))}: {s.reverted} {STATE['reverted'].said}, "
            f"{s.failed} {STATE['failing'].said}; cleanup: {cleanup}."
        )
        said += [f"Left alone: {h.said}." for h in s.held]
    return " ".join(said)


def _outcome_of(request: Request) -> str | None:
    """What the last apply came to, shown once after its redirect."""
    found: Any = request.session.pop("bulk_outcome", None)
    return found if isinstance(found, str) else None

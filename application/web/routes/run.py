"""A run's page: its status, phases, entries by state and log, kept live while the runner works;
and its whole log, a page at a time. Acting on it: run_actions."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from runledger.application.deps import AnswersDep
from runledger.application.reading.schemas.common import MAX_INT
from runledger.application.reading.shapes import run_summary
from runledger.application.web.render import page
from runledger.application.web.routes import run_actions, run_view
from runledger.application.web.routes.acts import outcome_of
from runledger.application.web.routes.run_view import live, pairs
from runledger.application.web.session import Reader

router = APIRouter(include_in_schema=False)
router.include_router(run_actions.router)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, answers: AnswersDep, actor: Reader, run_id: UUID) -> HTMLResponse:
    shown = live(answers, run_id, actor)
    return page(request, "run.html", actor, outcome=outcome_of(request, run_id), **shown)


@router.get("/runs/{run_id}/live", response_model=None)
def run_live(
    request: Request,
    answers: AnswersDep,
    actor: Reader,
    run_id: UUID,
    seen: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    """The run's live parts for the page's poll; 204 when nothing changed since ``seen``."""
    shown = live(answers, run_id, actor)
    if seen and seen == shown["seen"]:
        return Response(status_code=204)
    return page(request, "run_polled.html", actor, **shown)


@router.get("/runs/{run_id}/log", response_class=HTMLResponse)
def run_log(
    request: Request,
    answers: AnswersDep,
    actor: Reader,
    run_id: UUID,
    before: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
) -> HTMLResponse:
    run = run_summary(answers.known_run(run_id))
    log = answers.log_page(run_id, run_view.TAIL, before)
    return page(
        request,
        "run_log.html",
        actor,
        run=run,
        log=log,
        lines=[(line, pairs(line)) for line in log.lines],
        before=before,
    )

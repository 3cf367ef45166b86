"""Runs: list, read, start, advance, cancel, abort, clean up, replay."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Body, Query, Response
from pydantic import AwareDatetime

from runledger.application.api.answered import Answered
from runledger.application.api.deps import Operator, Viewer
from runledger.application.api.once import Once
from runledger.application.api.paging import ABOUT, LogCursor, log_before, log_cursor
from runledger.application.api.responses import ABOUT_ONE, ACTING, AUTHENTICATED
from runledger.application.deps import AnswersDep, CleanupDep, HistoryDep, LedgerDep, RunsDep
from runledger.application.reading import shapes
from runledger.application.reading.answers import MAX_PAGE, RUN_CURSOR
from runledger.application.reading.schemas import history, runs
from runledger.application.reading.schemas.common import StoredText
from runledger.application.reading.schemas.specs import Spec
from runledger.application.words import CLEANUP_STATUS_MEANS, UNDER_WAY_MEANS
from runledger.domain.run import RunStatus
from runledger.domain.status import CleanupFilter
from runledger.domain.values import MAX_TEXT
from runledger.projections.pages import RunFilter

router = APIRouter(
    prefix="/admin/events/runs", tags=["runs"], responses=AUTHENTICATED | ABOUT_ONE | ACTING
)


@router.get("", response_model=runs.RunPage)
def list_runs(
    answers: AnswersDep,
    _: Viewer,
    status: RunStatus | None = None,
    cleanup_status: Annotated[
        CleanupFilter | None, Query(description=f"{CLEANUP_STATUS_MEANS}; {UNDER_WAY_MEANS}")
    ] = None,
    name: Annotated[StoredText | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(pattern=RUN_CURSOR, description=ABOUT)] = None,
) -> Answered:
    """Runs newest first; pass `next_cursor` back as `cursor` for the next page."""
    return Answered(answers.run_page(RunFilter(status, cleanup_status, name), limit, cursor))


@router.post("", response_model=runs.RunDetail, status_code=201)
def start_run(
    runs_: RunsDep,
    answers: AnswersDep,
    actor: Operator,
    once: Once,
    spec: Annotated[Spec, Body(description="the run's spec, as `runledger start` reads it")],
) -> runs.RunDetail | Response:
    """Start a run, checked first as a definition's dry run checks it (params, phases, lease
    targets held now): a refusal names the field and writes nothing, 422 for what the document
    says, 409 for what this server's modules or the world refuse. Under an Idempotency-Key
    the run's id comes from the key, so a repeat answers the same run. `Location` is the
    run's."""
    return once(
        lambda: runs_.start(spec, run_id=once.run_id, by=actor.name),
        answers.run_detail,
        located=lambda started: f"{router.prefix}/{started.run.run_id}",
    )


@router.get("/{run_id}", response_model=runs.RunDetail)
def get_run(answers: AnswersDep, _: Viewer, run_id: UUID) -> Answered:
    return Answered(answers.run_detail(run_id))


@router.get("/{run_id}/log", response_model=runs.LogLines)
def get_log(
    answers: AnswersDep,
    _: Viewer,
    run_id: UUID,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE * 10)] = 200,
    cursor: LogCursor = None,
) -> Answered:
    """The run's last lines, in store order; `next_cursor` pages back to the lines before."""
    found = answers.log_page(run_id, limit, log_before(cursor))
    lines = runs.LogLines(
        run_id=run_id, items=found.lines, total=found.total, next_cursor=log_cursor(found.earlier)
    )
    return Answered(lines)


@router.post("/{run_id}/advance", response_model=runs.Advanced)
def advance_run(
    runs_: RunsDep, actor: Operator, once: Once, run_id: UUID
) -> runs.Advanced | Response:
    return once(
        lambda: runs_.advance(run_id, actor.name),
        lambda said: runs.Advanced(run_id=run_id, message=said),
    )


@router.post("/{run_id}/cancel", response_model=runs.RunDetail)
def cancel_run(
    ledger: LedgerDep,
    answers: AnswersDep,
    actor: Operator,
    once: Once,
    run_id: UUID,
    body: runs.Cancel | None = None,
) -> runs.RunDetail | Response:
    return once(
        lambda: ledger.cancel_run(run_id, actor.name, cleanup=body is None or body.cleanup),
        lambda _: answers.run_detail(run_id),
    )


@router.post("/{run_id}/abort", response_model=runs.RunDetail)
def abort_run(
    ledger: LedgerDep,
    answers: AnswersDep,
    actor: Operator,
    once: Once,
    run_id: UUID,
    body: runs.Abort,
) -> runs.RunDetail | Response:
    return once(
        lambda: ledger.abort_run(run_id, body.reason, by=actor.name),
        lambda _: answers.run_detail(run_id),
    )


@router.post("/{run_id}/cleanup", response_model=runs.CleanupSummary)
def clean_up_run(
    cleanup: CleanupDep, answers: AnswersDep, actor: Operator, once: Once, run_id: UUID
) -> runs.CleanupSummary | Response:
    """Ask again: reset the run's attempt counters and work it now, in the caller's name."""
    answers.known_run(run_id)
    return once(
        lambda: cleanup.manual_cleanup(run_id, actor.name),
        lambda summary: answers.cleanup_summary(run_id, summary),
    )


@router.get("/{run_id}/replay", response_model=history.Replay)
def replay_run(
    history_: HistoryDep,
    _: Viewer,
    run_id: UUID,
    as_of: AwareDatetime | None = None,
    entry: Annotated[
        StoredText | None,
        Query(max_length=MAX_TEXT, description="only the run and this entry: kind:ref or ref"),
    ] = None,
) -> history.Replay:
    """Every event of the run and its entries in store order, optionally as of a past time."""
    return shapes.replay(history_.replay(run_id, as_of, entry))

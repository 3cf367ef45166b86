"""The runs page: newest first, filtered, with how many need a person."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from runledger.application.deps import AnswersDep
from runledger.application.reading.schemas.common import StoredText
from runledger.application.web.render import choice, page
from runledger.application.web.session import Reader
from runledger.domain.run import RunStatus
from runledger.domain.status import CleanupFilter
from runledger.projections.pages import RunFilter

router = APIRouter(include_in_schema=False)
PAGE = 50


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/runs", status_code=303)


@router.get("/runs", response_class=HTMLResponse)
def runs_page(
    request: Request,
    answers: AnswersDep,
    actor: Reader,
    status: Annotated[str, Query(max_length=40)] = "",
    cleanup_status: Annotated[str, Query(max_length=40)] = "",
    name: Annotated[StoredText | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> HTMLResponse:
    where = RunFilter(
        choice("status", status, RunStatus),
        choice("cleanup_status", cleanup_status, CleanupFilter),
        name or None,
    )
    found = answers.run_page(where, PAGE, cursor)
    counts = answers.pages.run_counts(answers.clock(), answers.max_attempts)
    return page(
        request,
        "runs_table.html" if request.headers.get("HX-Request") == "true" else "runs.html",
        actor,
        runs=found,
        here=_here(request),
        filtered=where != RunFilter(None, None, None),
        older=_here(request, cursor=found.next_cursor) if found.next_cursor else None,
        status=status,
        cleanup_status=cleanup_status,
        name=name or "",
        cursor=cursor,
        need_a_person=sum(n for _, cleanup, n in counts if cleanup == "incomplete"),
        by_status=_totals(counts),
    )


def _here(request: Request, **changed: str) -> str:
    """This page's path and query (with ``changed`` put in): where it polls, and its next page."""
    url = request.url.include_query_params(**changed) if changed else request.url
    return url.path + (f"?{url.query}" if url.query else "")


def _totals(counts: list[tuple[str, str, int]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for status, _, n in counts:
        totals[status] = totals.get(status, 0) + n
    return totals

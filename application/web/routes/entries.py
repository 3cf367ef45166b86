"""An entry's page: what it is and where it stands, then its history version by version, in
words; the stored names and values stay one toggle away (and in the API's JSON)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from runledger.application.deps import AnswersDep, HistoryDep
from runledger.application.reading.schemas.common import MAX_INT
from runledger.application.reading.shapes import stepping
from runledger.application.web.render import page
from runledger.application.web.routes.acts import outcome_of
from runledger.application.web.session import Reader
from runledger.application.words import field_value
from runledger.domain.fate import UNRESOLVED
from runledger.domain.run import ended

router = APIRouter(include_in_schema=False)

SIDES = (
    ("baseline", "Baseline", "what was there before the run"),
    ("applied", "Applied", "what the run put there"),
    ("current", "Current", "what the module found there when giving it back"),
)
STORED = ("state", "terminal", "claimed_by", "claim_expires_at", "next_attempt_at", "last_error")
"""The entry's own fields the toggle shows under their stored names."""


def structured(value: Any) -> bool:
    """A value shown as indented JSON (a mapping or a list), not as words."""
    return isinstance(value, dict | list)


@router.get("/entries/{entry_id}", response_class=HTMLResponse)
def entry_page(
    request: Request,
    answers: AnswersDep,
    history_: HistoryDep,
    actor: Reader,
    entry_id: UUID,
    upto: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
) -> HTMLResponse:
    entry = answers.known_entry(entry_id)
    history = stepping(history_.step(entry_id, upto))
    run = answers.known_run(entry.run_id)
    return page(
        request,
        "entry.html",
        actor,
        entry=entry,
        run=run,
        running=not ended(run.status),
        unresolved=entry.state in UNRESOLVED,
        history=history,
        sides=SIDES,
        stored={name: getattr(entry, name) for name in STORED},
        field_value=field_value,
        structured=structured,
        outcome=outcome_of(request, entry_id),
    )

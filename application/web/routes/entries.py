"""An entry's page: what it is and where it stands, then its history version by version."""

from __future__ import annotations

import re
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from runledger.application.api import reading
from runledger.application.api.deps import Rl
from runledger.application.api.schemas.common import MAX_INT
from runledger.application.web.render import page
from runledger.application.web.session import Reader

router = APIRouter(include_in_schema=False)

EVENT = {
    "Recorded": "recorded",
    "Superseded": "superseded by what its step made",
    "RevertClaimed": "claimed, to give back",
    "Reverted": "given back",
    "RevertFailed": "giving back failed",
    "Drifted": "drifted: left alone",
    "Orphaned": "orphaned",
    "Expired": "expired",
    "AttemptsReset": "attempts reset, to try again",
    "Kept": "kept",
}
"""What each of an entry's events means, in words; the event's own name is shown beside."""

SIDES = (
    ("baseline", "Baseline", "what was there before the run"),
    ("applied", "Applied", "what the run put there"),
    ("current", "Current", "what the module found there when giving it back"),
)


def spoken(event: str) -> str:
    """An event's name as words: ``RevertClaimed`` → "revert claimed"."""
    return EVENT.get(event) or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", event).lower()


@router.get("/entries/{entry_id}", response_class=HTMLResponse)
def entry_page(
    request: Request,
    rl: Rl,
    actor: Reader,
    entry_id: UUID,
    upto: Annotated[int | None, Query(ge=1, le=MAX_INT)] = None,
) -> HTMLResponse:
    entry = reading.known_entry(rl, entry_id)
    history = reading.stepping(rl.history.step(entry_id, upto))
    return page(
        request,
        "entry.html",
        actor,
        entry=entry,
        run=reading.known_run(rl, entry.run_id),
        history=history,
        sides=SIDES,
        spoken=spoken,
    )

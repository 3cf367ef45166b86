"""Ledger entries: those a ref names, one entry, and its history version by version."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query

from runledger.application.api.answered import Answered
from runledger.application.api.deps import Viewer
from runledger.application.api.paging import Cursor, Limit, window
from runledger.application.api.responses import ABOUT_ONE, AUTHENTICATED
from runledger.application.deps import AnswersDep, HistoryDep
from runledger.application.reading import shapes
from runledger.application.reading.schemas import history, runs
from runledger.application.reading.schemas.common import MAX_INT, StoredText
from runledger.domain.values import MAX_TEXT

router = APIRouter(prefix="/admin/entries", tags=["entries"], responses=AUTHENTICATED | ABOUT_ONE)


@router.get("", response_model=runs.EntryPage)
def find_entries(
    answers: AnswersDep,
    _: Viewer,
    ref: Annotated[
        StoredText, Query(max_length=MAX_TEXT, description="an entry's ref, or its kind:ref")
    ],
    limit: Limit = 200,
    cursor: Cursor = None,
) -> Answered:
    """The entries of every run that this ref names, oldest first: the first 20 of them."""
    return Answered(window(limit, cursor).page(answers.entries_named(ref), _same, runs.EntryPage))


@router.get("/{entry_id}", response_model=runs.Entry)
def get_entry(answers: AnswersDep, _: Viewer, entry_id: UUID) -> Answered:
    return Answered(answers.known_entry(entry_id))


@router.get("/{entry_id}/history", response_model=history.EntryHistory)
def entry_history(
    history_: HistoryDep,
    _: Viewer,
    entry_id: UUID,
    upto: Annotated[
        int | None, Query(ge=1, le=MAX_INT, description="read no further than this version")
    ] = None,
) -> history.EntryHistory:
    """Each version's state, what changed, and for leases and drift the values side by side."""
    return shapes.stepping(history_.step(entry_id, upto))


def _same(found: runs.Entry) -> runs.Entry:
    return found

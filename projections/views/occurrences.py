"""The occurrences view: one row per occurrence, its pinned version and that version's verified
stamp, and whether it is still scheduled, started (as which run) or cancelled."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.occurrence import Occurrence
from runledger.projections.views.base import Row, RowView, epoch, require


@singledispatch
def apply_occurrence(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the occurrences view does not know {type(event).__name__}")


@apply_occurrence.register
def _(event: Occurrence.Scheduled, row: Row | None) -> Row:
    return {
        "occurrence_id": str(event.originator_id),
        "definition_id": str(event.definition_id),
        "definition": event.definition,
        "due_at": epoch(event.due_at),
        "state": "scheduled",
        "pinned_version": event.version,
        "verified_by": event.verified_by,
        "verified_at": epoch(event.verified_at),
        "scheduled_by": event.by,
        "scheduled_at": epoch(event.at),
        "run_id": None,
        "started_by": None,
        "started_at": None,
        "cancelled_by": None,
        "cancelled_at": None,
        "version": event.originator_version,
    }


@apply_occurrence.register
def _(event: Occurrence.Repinned, row: Row | None) -> Row:
    return require(row, event) | {
        "pinned_version": event.version,
        "verified_by": event.verified_by,
        "verified_at": epoch(event.verified_at),
        "version": event.originator_version,
    }


@apply_occurrence.register
def _(event: Occurrence.Started, row: Row | None) -> Row:
    return require(row, event) | {
        "state": "started",
        "run_id": str(event.run_id),
        "started_by": event.by,
        "started_at": epoch(event.at),
        "version": event.originator_version,
    }


@apply_occurrence.register
def _(event: Occurrence.Cancelled, row: Row | None) -> Row:
    return require(row, event) | {
        "state": "cancelled",
        "cancelled_by": event.by,
        "cancelled_at": epoch(event.at),
        "version": event.originator_version,
    }


class OccurrencesView(RowView):
    name = "occurrences"
    table = "rl_occurrences"
    key = "occurrence_id"
    columns = (
        "occurrence_id",
        "definition_id",
        "definition",
        "due_at",
        "state",
        "pinned_version",
        "verified_by",
        "verified_at",
        "scheduled_by",
        "scheduled_at",
        "run_id",
        "started_by",
        "started_at",
        "cancelled_by",
        "cancelled_at",
        "version",
    )
    events = (
        Occurrence.Scheduled,
        Occurrence.Repinned,
        Occurrence.Started,
        Occurrence.Cancelled,
    )
    apply = apply_occurrence

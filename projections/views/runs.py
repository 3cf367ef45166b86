"""The runs view: one row per run, its phase and how it ended."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.run import Run
from runledger.projections.views.base import Row, RowView, epoch, require


@singledispatch
def apply_run(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the runs view does not know {type(event).__name__}")


@apply_run.register
def _(event: Run.Started, row: Row | None) -> Row:
    return {
        "run_id": str(event.originator_id),
        "name": event.name,
        "status": "running",
        "started_at": epoch(event.at),
        "ended_at": None,
        "ended_by": None,
        "end_reason": None,
        "phase": 0,
        "version": event.originator_version,
        # Started by an occurrence: which definition version, and its verified stamp.
        "definition": event.definition,
        "definition_version": event.definition_version,
        "occurrence_id": None if event.occurrence_id is None else str(event.occurrence_id),
        "verified_by": event.verified_by,
        "verified_at": epoch(event.verified_at),
    }


@apply_run.register
def _(event: Run.PhaseAdvanced, row: Row | None) -> Row:
    return require(row, event) | {"phase": event.phase, "version": event.originator_version}


def _ended(row: Row | None, event: Any, status: str, by: str | None, reason: str | None) -> Row:
    return require(row, event) | {
        "status": status,
        "ended_at": epoch(event.at),
        "ended_by": by,
        "end_reason": reason,
        "version": event.originator_version,
    }


@apply_run.register
def _(event: Run.Completed, row: Row | None) -> Row:
    return _ended(row, event, "completed", getattr(event, "by", None), None)


@apply_run.register
def _(event: Run.Cancelled, row: Row | None) -> Row:
    reason = "with cleanup" if event.cleanup else "without cleanup"
    return _ended(row, event, "cancelled", event.by, reason)


@apply_run.register
def _(event: Run.Aborted, row: Row | None) -> Row:
    return _ended(row, event, "aborted", event.by, event.reason)


class RunsView(RowView):
    name = "runs"
    table = "rl_runs"
    key = "run_id"
    columns = (
        "run_id",
        "name",
        "status",
        "started_at",
        "ended_at",
        "ended_by",
        "end_reason",
        "phase",
        "version",
        "definition",
        "definition_version",
        "occurrence_id",
        "verified_by",
        "verified_at",
    )
    events = (Run.Started, Run.PhaseAdvanced, Run.Completed, Run.Cancelled, Run.Aborted)
    apply = apply_run

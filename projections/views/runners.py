"""The runners view: one row per runner process, from its RunnerRecord events."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.runner_record import RunnerRecord
from runledger.projections.views.base import ProjectionError, Row, RowView, as_json, epoch


@singledispatch
def apply_runner(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the runners view does not know {type(event).__name__}")


@apply_runner.register
def _(event: RunnerRecord.Started, row: Row | None) -> Row:
    return {
        "runner_id": str(event.originator_id),
        "worker": event.worker,
        "host": event.host,
        "pid": event.pid,
        "modules": as_json(list(event.modules)),
        "actions": as_json(list(event.actions)),
        "leases": as_json(list(event.leases)),
        "started_at": epoch(event.at),
        "stopped_at": None,
        "version": event.originator_version,
    }


@apply_runner.register
def _(event: RunnerRecord.Stopped, row: Row | None) -> Row:
    if row is None:
        raise ProjectionError(f"Stopped for runner {event.originator_id} has no row")
    return row | {"stopped_at": epoch(event.at), "version": event.originator_version}


class RunnersView(RowView):
    name = "runners"
    table = "rl_runners"
    key = "runner_id"
    columns = (
        "runner_id",
        "worker",
        "host",
        "pid",
        "modules",
        "actions",
        "leases",
        "started_at",
        "stopped_at",
        "version",
    )
    events = (RunnerRecord.Started, RunnerRecord.Stopped)
    apply = apply_runner

"""The run log view: one line per fact worth a sentence, keyed by its store position."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runledger.domain.run import Run
from runledger.domain.runlog import LogEntry, LogKind
from runledger.domain.step import Step
from runledger.projections.backend import Backend, Cursor
from runledger.projections.views.base import Event, EventView, as_json, cells, epoch


class RunLogView(EventView):
    """The run log: one line per fact worth a sentence, keyed by its position in the store."""

    name = "run_log"
    table = "rl_run_log"
    events = (
        LogEntry.Written,
        Run.Started,
        Run.PhaseAdvanced,
        Run.Completed,
        Run.Cancelled,
        Run.Aborted,
        Step.Succeeded,
        Step.Failed,
    )

    def process(
        self, backend: Backend, cursor: Cursor, events: Sequence[tuple[int, Event]]
    ) -> None:
        if not events:
            return
        cursor.executemany(
            backend.sql(
                "INSERT INTO {rl_run_log} (position, run_id, at, kind, detail) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
            ),
            [cells([position, *self.line(event)]) for position, event in events],
        )

    @staticmethod
    def line(event: Any) -> list[Any]:
        if isinstance(event, LogEntry.Written):
            return [str(event.run_id), epoch(event.at), event.kind, as_json(event.detail)]
        detail: dict[str, Any] = {}
        kind: LogKind
        if isinstance(event, Step.Succeeded | Step.Failed):
            return _step_line(event)
        if isinstance(event, Run.Started):
            kind, detail = "run.started", {"name": event.name}
        elif isinstance(event, Run.PhaseAdvanced):
            kind, detail = "run.phase_advanced", {"phase": event.phase, "by": event.by}
        elif isinstance(event, Run.Completed):
            kind = "run.completed"
        elif isinstance(event, Run.Cancelled):
            kind, detail = "run.cancelled", {"by": event.by, "cleanup": event.cleanup}
        else:
            kind, detail = "run.aborted", {"reason": event.reason}
        return [str(event.originator_id), epoch(event.at), kind, as_json(detail)]


def _step_line(event: Step.Succeeded | Step.Failed) -> list[Any]:
    detail: dict[str, Any] = {"step": event.step_id, "attempt": event.attempt}
    kind: LogKind
    if isinstance(event, Step.Succeeded):
        kind, detail = "step.succeeded", detail | {"entries": event.entries}
    else:
        kind, detail = "step.failed", detail | {"error": event.error}
    return [str(event.run_id), epoch(event.at), kind, as_json(detail)]

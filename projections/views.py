from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache, singledispatch
from typing import Any, ClassVar

from eventsourcing.domain import DomainEventProtocol

from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.domain.runlog import LogEntry
from runledger.domain.step import MAX_STEP_ATTEMPTS, Step
from runledger.domain.topics import topics_of
from runledger.domain.values import written_out
from runledger.projections.backend import Backend, Cursor, chunks

Row = dict[str, Any]
Event = DomainEventProtocol[Any]


class ProjectionError(Exception):
    """The store holds an event this view cannot place: the view must be rebuilt."""


def _require(row: Row | None, event: Any) -> Row:
    if row is None:
        raise ProjectionError(f"{type(event).__qualname__} for {event.originator_id} has no row")
    return row


def cells(values: list[Any]) -> list[Any]:
    """A row as every engine takes it. Events stored before values were checked at the edge may
    hold a NUL, which PostgreSQL text refuses: it is written out, never a reason to stop."""
    return [written_out(v) if type(v) is str else v for v in values]


def epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def as_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


class EventView:
    """A view: its name, its table, and the events it reads."""

    name: ClassVar[str]
    table: ClassVar[str]
    events: ClassVar[tuple[type[Any], ...]]

    @classmethod
    @cache
    def topics(cls) -> frozenset[str]:
        return frozenset(t for e in cls.events for t in topics_of(e))


class RowView(EventView):
    """A table with one row per aggregate, kept by applying each event to its row.

    A page of events is applied in memory to the rows it touches, which are then written back in
    one statement: a page costs two round trips whatever its size.
    """

    key: ClassVar[str]
    columns: ClassVar[tuple[str, ...]]
    apply: ClassVar[Callable[[Any, Row | None], Row]]

    def process(
        self, backend: Backend, cursor: Cursor, events: Sequence[tuple[int, Event]]
    ) -> None:
        if not events:
            return
        rows = self._load(backend, cursor, sorted({str(e.originator_id) for _, e in events}))
        for _, event in events:
            entry = str(event.originator_id)
            rows[entry] = type(self).apply(event, rows.get(entry))
        self._store(backend, cursor, list(rows.values()))

    def _load(self, backend: Backend, cursor: Cursor, ids: list[str]) -> dict[str, Row]:
        found: dict[str, Row] = {}
        for part in chunks(ids):
            markers = backend.markers(len(part))
            cursor.execute(
                backend.sql(f"SELECT * FROM {{{self.table}}} WHERE {self.key} IN ({markers})"),
                list(part),
            )
            for row in cursor.fetchall():
                found[row[self.key]] = {c: row[c] for c in self.columns}
        return found

    def _store(self, backend: Backend, cursor: Cursor, rows: list[Row]) -> None:
        backend.upsert(
            cursor, self.table, self.columns, self.key,
            [cells([row[c] for c in self.columns]) for row in rows],
        )


@singledispatch
def apply_run(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the runs view does not know {type(event).__name__}")


@apply_run.register
def _(event: Run.Started, row: Row | None) -> Row:
    return {
        "run_id": str(event.originator_id), "name": event.name, "status": "running",
        "started_at": epoch(event.at), "ended_at": None, "ended_by": None, "end_reason": None,
        "phase": 0, "version": event.originator_version,
    }


@apply_run.register
def _(event: Run.PhaseAdvanced, row: Row | None) -> Row:
    return _require(row, event) | {"phase": event.phase, "version": event.originator_version}


def _ended(row: Row | None, event: Any, status: str, by: str | None, reason: str | None) -> Row:
    return _require(row, event) | {
        "status": status, "ended_at": epoch(event.at), "ended_by": by, "end_reason": reason,
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
    return _ended(row, event, "aborted", None, event.reason)


class RunsView(RowView):
    name = "runs"
    table = "rl_runs"
    key = "run_id"
    columns = (
        "run_id", "name", "status", "started_at", "ended_at", "ended_by", "end_reason", "phase",
        "version",
    )
    events = (Run.Started, Run.PhaseAdvanced, Run.Completed, Run.Cancelled, Run.Aborted)
    apply = apply_run


@singledispatch
def apply_resource(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the resources view does not know {type(event).__name__}")


def _changed(row: Row | None, event: Any, **changes: Any) -> Row:
    stamp = {"updated_at": epoch(event.at), "version": event.originator_version}
    return _require(row, event) | changes | stamp


_RELEASED = {"claim_worker": None, "claim_expires": None, "next_attempt": None}


@apply_resource.register
def _(event: Resource.Recorded, row: Row | None) -> Row:
    return {
        "entry_id": str(event.originator_id), "run_id": str(event.run_id), "step": event.step,
        "kind": event.kind, "ref": event.ref, "module": event.module, "action": event.action,
        "idempotency_key": event.idempotency_key, "payload": as_json(event.payload),
        "member_key": event.member_key, "until": epoch(event.until),
        "status": "placeholder" if event.kind == "@step" else "live", "attempts": 0,
        "terminal": 0, "claim_worker": None, "claim_expires": None, "last_error": None,
        "drift_current": None, "recorded_at": epoch(event.at), "updated_at": epoch(event.at),
        "next_attempt": None, "version": event.originator_version,
    }


@apply_resource.register
def _(event: Resource.Superseded, row: Row | None) -> Row:
    return _changed(row, event, status="superseded")


@apply_resource.register
def _(event: Resource.RevertClaimed, row: Row | None) -> Row:
    return _changed(
        row, event, attempts=event.attempt, claim_worker=event.worker,
        claim_expires=epoch(event.expires_at), next_attempt=None,
    )


@apply_resource.register
def _(event: Resource.Reverted, row: Row | None) -> Row:
    return _changed(row, event, status="reverted", **_RELEASED)


@apply_resource.register
def _(event: Resource.RevertFailed, row: Row | None) -> Row:
    return _changed(
        row, event, status="failing", terminal=int(event.mode == "terminal"),
        last_error=event.error, **_RELEASED | {"next_attempt": epoch(event.next_attempt_at)},
    )


@apply_resource.register
def _(event: Resource.Drifted, row: Row | None) -> Row:
    return _changed(
        row, event, status="drifted", last_error=event.error,
        drift_current=as_json(event.current), **_RELEASED,
    )


@apply_resource.register
def _(event: Resource.Orphaned, row: Row | None) -> Row:
    return _changed(row, event, status="orphaned", last_error=event.reason)


@apply_resource.register
def _(event: Resource.Expired, row: Row | None) -> Row:
    return _changed(row, event, status="expired", **_RELEASED)


@apply_resource.register
def _(event: Resource.AttemptsReset, row: Row | None) -> Row:
    status = _require(row, event)["status"]
    status = "failing" if status == "drifted" else status
    return _changed(row, event, status=status, attempts=0, terminal=0, **_RELEASED)


@apply_resource.register
def _(event: Resource.Kept, row: Row | None) -> Row:
    return _changed(row, event, status="kept", **_RELEASED)


class ResourcesView(RowView):
    name = "resources"
    table = "rl_resources"
    key = "entry_id"
    columns = (
        "entry_id", "run_id", "step", "kind", "ref", "module", "action", "idempotency_key",
        "payload", "member_key", "until", "status", "attempts", "terminal", "claim_worker",
        "claim_expires", "last_error", "drift_current", "recorded_at", "updated_at",
        "next_attempt", "version",
    )
    events = (
        Resource.Recorded, Resource.Superseded, Resource.RevertClaimed, Resource.Reverted,
        Resource.RevertFailed, Resource.Drifted, Resource.Orphaned, Resource.Expired,
        Resource.AttemptsReset, Resource.Kept,
    )
    apply = apply_resource


@singledispatch
def apply_step(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the steps view does not know {type(event).__name__}")


@apply_step.register
def _(event: Step.Planned, row: Row | None) -> Row:
    return {
        "step_key": str(event.originator_id), "run_id": str(event.run_id),
        "step_id": event.step_id, "phase": event.phase, "action": event.action,
        "state": "waiting", "attempts": 0, "claim_worker": None, "claim_expires": None,
        "last_error": None, "done_at": None, "version": event.originator_version,
    }


@apply_step.register
def _(event: Step.DispatchClaimed, row: Row | None) -> Row:
    return _require(row, event) | {
        "attempts": event.attempt, "claim_worker": event.worker,
        "claim_expires": epoch(event.expires_at), "version": event.originator_version,
    }


@apply_step.register
def _(event: Step.Succeeded, row: Row | None) -> Row:
    return _require(row, event) | {
        "state": "done", "done_at": epoch(event.at), "claim_worker": None,
        "claim_expires": None, "version": event.originator_version,
    }


@apply_step.register
def _(event: Step.Failed, row: Row | None) -> Row:
    return _require(row, event) | {
        "state": "gave_up" if event.final or event.attempt >= MAX_STEP_ATTEMPTS else "waiting",
        "last_error": event.error, "claim_worker": None, "claim_expires": None,
        "version": event.originator_version,
    }


class StepsView(RowView):
    name = "steps"
    table = "rl_steps"
    key = "step_key"
    columns = (
        "step_key", "run_id", "step_id", "phase", "action", "state", "attempts", "claim_worker",
        "claim_expires", "last_error", "done_at", "version",
    )
    events = (Step.Planned, Step.DispatchClaimed, Step.Succeeded, Step.Failed)
    apply = apply_step


class RunLogView(EventView):
    """The run log: one line per fact worth a sentence, keyed by its position in the store."""

    name = "run_log"
    table = "rl_run_log"
    events = (
        LogEntry.Written, Run.Started, Run.PhaseAdvanced, Run.Completed, Run.Cancelled,
        Run.Aborted, Step.Succeeded, Step.Failed,
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
    if isinstance(event, Step.Succeeded):
        kind, detail = "step.succeeded", detail | {"entries": event.entries}
    else:
        kind, detail = "step.failed", detail | {"error": event.error}
    return [str(event.run_id), epoch(event.at), kind, as_json(detail)]

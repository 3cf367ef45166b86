"""What operators do with the history: replay a run's cleanup, step one entry's events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.application.errors import BadRequest, NotFound
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.resource import Resource
from runledger.domain.run import Run
from runledger.domain.status import CleanupStatus, cleanup_status
from runledger.domain.step import Step
from runledger.projections.backend import Backend
from runledger.projections.queries import Queries

STATE_FIELDS = (
    "state",
    "attempts",
    "terminal",
    "claim_worker",
    "claim_expires_at",
    "next_attempt_at",
    "last_error",
    "payload",
    "drift_current",
    "kept_by",
    "kept_reason",
    "note",
)


@dataclass(frozen=True)
class ReplayLine:
    position: int
    at: datetime
    subject: str
    event: str
    actor: str | None
    outcome: str


@dataclass(frozen=True)
class EntryState:
    entry_id: UUID
    name: str
    state: str
    attempts: int
    last_error: str | None


@dataclass
class Replay:
    run_id: UUID
    name: str
    as_of: datetime | None
    lines: list[ReplayLine]
    entries: list[EntryState]
    run_status: str
    cleanup_status: CleanupStatus


@dataclass(frozen=True)
class StepFrame:
    version: int
    event: str
    at: datetime
    state: dict[str, Any]
    changed: dict[str, tuple[Any, Any]]
    values: dict[str, Any] | None = None
    actor: str | None = None


@dataclass
class Stepping:
    entry_id: UUID
    name: str
    frames: list[StepFrame] = field(default_factory=list)
    total: int = 0


class History:
    """Reads the store itself (never the projections' opinion) to answer for the past."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        backend: Backend,
        queries: Queries,
        settings: Settings,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.backend = backend
        self.queries = queries
        self.settings = settings
        self.clock = clock

    def replay(
        self, run_id: UUID, as_of: datetime | None = None, entry_ref: str | None = None
    ) -> Replay:
        """Every event of a run and of its ledger entries, in store order."""
        entries = [
            e.entry_id
            for e in self.queries.entries(run_id)
            if entry_ref is None or e.ref == entry_ref or e.name == entry_ref
        ]
        if entry_ref is not None and not entries:
            raise NotFound(f"run {run_id} has no entry {entry_ref!r}")
        steps = [] if entry_ref else self.queries.step_keys(run_id)
        stored = self.backend.select_positioned([run_id, *entries, *steps])
        if not any(s.originator_id == run_id for _, s in stored):
            raise NotFound(f"no run {run_id}")
        folded: dict[UUID, Any] = {}
        lines = []
        for position, record in stored:
            event: Any = self.app.mapper.to_domain_event(record)
            if as_of is not None and event.at > as_of:
                continue
            before = folded.get(event.originator_id)
            actor = _actor(event, before)  # before mutate(), which changes the aggregate in place
            after = event.mutate(before)
            folded[event.originator_id] = after
            lines.append(
                ReplayLine(
                    position,
                    event.at,
                    _subject(after),
                    type(event).__name__,
                    actor,
                    _outcome(event, after),
                )
            )
        run = folded.get(run_id)
        if run is None:
            raise NotFound(f"no run {run_id} had started by {as_of}")
        resources = [a for a in folded.values() if isinstance(a, Resource)]
        now = as_of or self.clock()
        status = cleanup_status(
            running=not run.is_terminal,
            entries=len(resources),
            unresolved=sum(r.unresolved for r in resources),
            open_=sum(r.still_open(now, self.settings.max_revert_attempts) for r in resources),
        )
        states = [
            EntryState(r.id, f"{r.kind}:{r.ref}", r.state, r.attempts, r.last_error)
            for r in resources
        ]
        return Replay(run_id, run.name, as_of, lines, states, run.status, status)

    def step(self, entry_id: UUID, upto: int | None = None) -> Stepping:
        """An entry's events version by version, reading no further than ``upto``."""
        if upto is not None and upto < 1:
            raise BadRequest(f"versions start at 1; version {upto} was asked for")
        events: list[Any] = list(self.app.events.get(entry_id, lte=upto))
        if not events:
            raise NotFound(f"no ledger entry {entry_id}")
        stepping = Stepping(entry_id, "")
        entry: Any = None
        before: dict[str, Any] = {}
        for event in events:
            actor = _actor(event, entry)  # before mutate(), which changes the entry in place
            entry = event.mutate(entry)
            if not isinstance(entry, Resource):
                raise BadRequest(f"{entry_id} is not a ledger entry")
            state = {name: getattr(entry, name) for name in STATE_FIELDS}
            changed = {k: (before.get(k), v) for k, v in state.items() if before.get(k) != v}
            stepping.frames.append(
                StepFrame(
                    entry.version,
                    type(event).__name__,
                    event.at,
                    state,
                    changed,
                    _values(entry),
                    actor,
                )
            )
            before = state
        stepping.name = f"{entry.kind}:{entry.ref}"
        stepping.total = self._version(entry_id, upto, entry.version)
        return stepping

    def _version(self, entry_id: UUID, upto: int | None, reached: int) -> int:
        if upto is None or reached < upto:
            return reached
        return self.backend.last_version(entry_id) or reached


def _values(entry: Resource) -> dict[str, Any] | None:
    """Baseline, applied and current side by side, for a lease or a drift."""
    if not entry.is_lease and entry.state != "drifted":
        return None
    payload = entry.payload or {}
    return {
        "baseline": payload.get("baseline"),
        "applied": payload.get("applied"),
        "current": entry.drift_current,
    }


def _subject(aggregate: Any) -> str:
    if isinstance(aggregate, Resource):
        return f"{aggregate.kind}:{aggregate.ref}"
    if isinstance(aggregate, Step):
        return f"step {aggregate.step_id}"
    if isinstance(aggregate, Run):
        return "run"
    return type(aggregate).__name__


def _actor(event: Any, before: Any) -> str | None:
    for name in ("worker", "by"):
        if getattr(event, name, None):
            return str(getattr(event, name))
    holder = getattr(before, "claim_worker", None)
    return str(holder) if holder else None


def _outcome(event: Any, after: Any) -> str:
    if isinstance(event, Resource.RevertFailed):
        return f"{event.mode}: {event.error}"
    if isinstance(event, Resource.Drifted):
        return event.error
    if isinstance(event, Resource.Orphaned | Resource.Expired):
        return event.reason
    if isinstance(event, Resource.Kept) and event.reason:
        return f"kept: {event.reason}"
    if isinstance(event, Resource.RevertClaimed | Step.DispatchClaimed):
        return f"attempt {event.attempt}"
    if isinstance(event, Step.Failed):
        return f"attempt {event.attempt}: {event.error}"
    if isinstance(event, Run.Aborted):
        return event.reason
    if isinstance(after, Resource):
        return after.state
    return str(getattr(after, "status", getattr(after, "state", "")))

"""What the queries answer: rows of the views as plain, immutable values."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from runledger.domain.fate import STATES
from runledger.domain.run import Origin
from runledger.domain.status import CleanupStatus, cleanup_status
from runledger.projections.lazy import known_uuid, parse_state


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _json(value: str | None) -> Any:
    return None if value is None else parse_state(value)


@dataclass(frozen=True)
class EntryRow:
    entry_id: UUID
    run_id: UUID
    step: str
    kind: str
    ref: str
    module: str
    action: str | None
    idempotency_key: str
    payload: Any
    member_key: str | None
    until: datetime | None
    status: str
    attempts: int
    terminal: bool
    claim_worker: str | None
    claim_expires: datetime | None
    last_error: str | None
    drift_current: Any
    version: int
    next_attempt: datetime | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.ref}"

    @classmethod
    def of(cls, row: Any) -> EntryRow:
        # Filled in place rather than through the frozen __init__, which sets its twenty fields
        # one object.__setattr__ at a time: a sweep makes one for every entry it works (filled
        # here with orjson and the cached run id; scripts/MEASUREMENTS.md, "Entry rows filled in
        # place"). Still frozen: assigning raises.
        made = object.__new__(cls)
        made.__dict__.update(
            entry_id=UUID(row["entry_id"]),
            run_id=known_uuid(row["run_id"]),
            step=row["step"],
            kind=row["kind"],
            ref=row["ref"],
            module=row["module"],
            action=row["action"],
            idempotency_key=row["idempotency_key"],
            payload=_json(row["payload"]),
            member_key=row["member_key"],
            until=_time(row["until"]),
            status=row["status"],
            attempts=row["attempts"],
            terminal=bool(row["terminal"]),
            claim_worker=row["claim_worker"],
            claim_expires=_time(row["claim_expires"]),
            last_error=row["last_error"],
            drift_current=_json(row["drift_current"]),
            version=row["version"],
            next_attempt=_time(row["next_attempt"]),
        )
        return made


@dataclass(frozen=True)
class RunRow:
    run_id: UUID
    name: str
    status: str
    cleanup_status: CleanupStatus
    entries: int
    unresolved: int
    ended_by: str | None
    end_reason: str | None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    origin: Origin | None = None
    states: dict[str, int] = field(default_factory=dict)
    """How many of its entries are in each state (none in a state: not there)."""

    @classmethod
    def of(cls, row: Any) -> RunRow:
        """A run with its entries counted: all of them, the unresolved, the still open, and how
        many in each state. A placeholder its step's answer replaced is not one of its entries;
        its status still counts every row, as the SQL's (pages.py) does."""
        ledgered, unresolved = int(row["entries"]), int(row["unresolved"] or 0)
        states: dict[str, int] = {s: int(row[f"n_{s}"]) for s in STATES if row[f"n_{s}"]}
        replaced = states.pop("superseded", 0)
        return cls(
            run_id=UUID(row["run_id"]),
            name=row["name"],
            status=row["status"],
            cleanup_status=cleanup_status(
                running=row["status"] == "running",
                entries=ledgered,
                unresolved=unresolved,
                open_=int(row["open"] or 0),
            ),
            entries=ledgered - replaced,
            unresolved=unresolved,
            ended_by=row["ended_by"],
            end_reason=row["end_reason"],
            started_at=_time(row["started_at"]),
            ended_at=_time(row["ended_at"]),
            origin=_origin(row),
            states=states,
        )


def _origin(row: Any) -> Origin | None:
    """The definition version a run was started from, when an occurrence started it."""
    if row["definition"] is None or row["occurrence_id"] is None:
        return None
    return Origin(
        definition=row["definition"],
        version=int(row["definition_version"]),
        occurrence_id=UUID(row["occurrence_id"]),
        verified_by=row["verified_by"],
        verified_at=_time(row["verified_at"]),
    )


@dataclass(frozen=True)
class LogLine:
    position: int
    run_id: UUID
    at: datetime
    kind: str
    detail: dict[str, Any]

    @classmethod
    def of(cls, row: Any) -> LogLine:
        return cls(
            position=int(row["position"]),
            run_id=UUID(row["run_id"]),
            at=datetime.fromtimestamp(row["at"], UTC),
            kind=row["kind"],
            detail=json.loads(row["detail"]),
        )

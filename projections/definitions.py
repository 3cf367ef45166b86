"""Reads over the definitions and occurrences views."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from runledger.domain.definition import DryRun, Stamp, verification
from runledger.domain.occurrence import OccurrenceState
from runledger.projections.fresh_reads import FreshReads


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _stamp(by: str | None, at: float | None) -> Stamp | None:
    when = _time(at)
    return None if by is None or when is None else Stamp(by, when)


@dataclass(frozen=True)
class DefinitionRow:
    definition_id: UUID
    name: str
    created_by: str
    created_at: datetime
    revision: int
    fingerprint: str
    edited_by: str
    edited_at: datetime
    dry_runs: int
    last_dry_run_passed: bool | None
    last_dry_run_at: datetime | None
    draft_verified: Stamp | None
    """What the draft would be published with now: the domain's rule over the passing dry run."""
    versions: int
    published_at: datetime | None
    latest_verified: Stamp | None
    scheduled: int

    @classmethod
    def of(cls, row: Any) -> DefinitionRow:
        passing = None
        if row["passed_fingerprint"] is not None:
            passing = DryRun(
                number=0,
                revision=int(row["passed_revision"]),
                fingerprint=row["passed_fingerprint"],
                problems=(),
                by=row["passed_by"],
                at=datetime.fromtimestamp(row["passed_at"], UTC),
            )
        passed = row["last_dry_run_passed"]
        return cls(
            definition_id=UUID(row["definition_id"]),
            name=row["name"],
            created_by=row["created_by"],
            created_at=datetime.fromtimestamp(row["created_at"], UTC),
            revision=int(row["revision"]),
            fingerprint=row["fingerprint"],
            edited_by=row["edited_by"],
            edited_at=datetime.fromtimestamp(row["edited_at"], UTC),
            dry_runs=int(row["dry_runs"]),
            last_dry_run_passed=None if passed is None else bool(passed),
            last_dry_run_at=_time(row["last_dry_run_at"]),
            draft_verified=verification(row["fingerprint"], int(row["revision"]), passing),
            versions=int(row["versions"]),
            published_at=_time(row["published_at"]),
            latest_verified=_stamp(row["latest_verified_by"], row["latest_verified_at"]),
            scheduled=int(row["scheduled"]),
        )


@dataclass(frozen=True)
class OccurrenceRow:
    occurrence_id: UUID
    definition_id: UUID
    definition: str
    due_at: datetime
    state: OccurrenceState
    version: int
    verified: Stamp | None
    scheduled_by: str
    scheduled_at: datetime
    run_id: UUID | None
    started_by: str | None
    started_at: datetime | None
    cancelled_by: str | None
    cancelled_at: datetime | None

    @classmethod
    def of(cls, row: Any) -> OccurrenceRow:
        return cls(
            occurrence_id=UUID(row["occurrence_id"]),
            definition_id=UUID(row["definition_id"]),
            definition=row["definition"],
            due_at=datetime.fromtimestamp(row["due_at"], UTC),
            state=row["state"],
            version=int(row["pinned_version"]),
            verified=_stamp(row["verified_by"], row["verified_at"]),
            scheduled_by=row["scheduled_by"],
            scheduled_at=datetime.fromtimestamp(row["scheduled_at"], UTC),
            run_id=None if row["run_id"] is None else UUID(row["run_id"]),
            started_by=row["started_by"],
            started_at=_time(row["started_at"]),
            cancelled_by=row["cancelled_by"],
            cancelled_at=_time(row["cancelled_at"]),
        )


class DefinitionRows(FreshReads):
    """The definitions and their occurrences as the views hold them; ``fresh`` brings the views
    level with the store first."""

    def listing(self, limit: int) -> list[DefinitionRow]:
        rows = self._rows("SELECT * FROM {rl_definitions} ORDER BY name LIMIT %s", [limit])
        return [DefinitionRow.of(row) for row in rows]

    def one(self, definition_id: UUID) -> DefinitionRow | None:
        rows = self._rows(
            "SELECT * FROM {rl_definitions} WHERE definition_id = %s", [str(definition_id)]
        )
        return DefinitionRow.of(rows[0]) if rows else None

    def due(self, now: datetime, limit: int) -> list[OccurrenceRow]:
        """Scheduled occurrences whose time has come, longest waiting first (the due index)."""
        rows = self._rows(
            "SELECT * FROM {rl_occurrences} WHERE state = 'scheduled' AND due_at <= %s "
            "ORDER BY due_at, occurrence_id LIMIT %s",
            [now.timestamp(), limit],
        )
        return [OccurrenceRow.of(row) for row in rows]

    def scheduled(self, definition_id: UUID) -> list[OccurrenceRow]:
        """Every occurrence of one definition still waiting to start."""
        rows = self._rows(
            "SELECT * FROM {rl_occurrences} WHERE definition_id = %s AND state = 'scheduled' "
            "ORDER BY due_at, occurrence_id",
            [str(definition_id)],
        )
        return [OccurrenceRow.of(row) for row in rows]

    def occurrences(
        self, definition_id: UUID | None, state: OccurrenceState | None, limit: int
    ) -> list[OccurrenceRow]:
        """Occurrences in due order, of one definition or all, in one state or any."""
        where, params = [], []
        if definition_id is not None:
            where.append("definition_id = %s")
            params.append(str(definition_id))
        if state is not None:
            where.append("state = %s")
            params.append(state)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._rows(
            f"SELECT * FROM {{rl_occurrences}} {clause} ORDER BY due_at, occurrence_id LIMIT %s",
            [*params, limit],
        )
        return [OccurrenceRow.of(row) for row in rows]

    def occurrence(self, occurrence_id: UUID) -> OccurrenceRow | None:
        rows = self._rows(
            "SELECT * FROM {rl_occurrences} WHERE occurrence_id = %s", [str(occurrence_id)]
        )
        return OccurrenceRow.of(rows[0]) if rows else None

"""The runners as the store knows them: the heartbeat table, and reads joining it to the view.

Heartbeats are not events. A runner beats every tick: as events that would be ~86,000 a day per
runner (a tick a second), kept for ever, and an idle runner would write history. A heartbeat is
a liveness signal: only the last one matters, so each runner overwrites one row of its own in
rl_heartbeats. It is no projection (nothing replays it), and a rebuild leaves it alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from runledger.projections.backend import Backend

_COLUMNS = (
    "r.runner_id, r.worker, r.host, r.pid, r.modules, r.actions, r.leases, r.started_at, "
    "r.stopped_at, h.beat_at"
)

_BEATING = (
    f"SELECT {_COLUMNS} FROM {{rl_heartbeats}} h JOIN {{rl_runners}} r "
    "ON r.runner_id = h.runner_id WHERE h.beat_at >= %s AND r.stopped_at IS NULL"
)


@dataclass(frozen=True)
class RunnerRow:
    runner_id: UUID
    worker: str
    host: str
    pid: int
    modules: tuple[str, ...]
    actions: tuple[str, ...]
    leases: tuple[str, ...]
    started_at: datetime
    stopped_at: datetime | None
    last_beat: datetime | None

    @classmethod
    def of(cls, row: Any) -> RunnerRow:
        return cls(
            UUID(row["runner_id"]),
            row["worker"],
            row["host"],
            int(row["pid"]),
            _names(row["modules"]),
            _names(row["actions"]),
            _names(row["leases"]),
            _time(row["started_at"]),
            _maybe_time(row["stopped_at"]),
            _maybe_time(row["beat_at"]),
        )


def _names(text: str) -> tuple[str, ...]:
    return tuple(str(name) for name in json.loads(text))


def _time(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _maybe_time(value: float | None) -> datetime | None:
    return None if value is None else _time(value)


class RunnerRows:
    """Writes a runner's heartbeat; reads runners with their last heartbeat, the runners view
    caught up first by ``fresh``, as Queries does."""

    def __init__(self, backend: Backend, *, fresh: Callable[[], object]) -> None:
        self.backend = backend
        self.fresh = fresh

    def beat(self, runner_id: UUID, at: datetime) -> None:
        """One statement: this runner's row says it was alive at ``at``."""
        with self.backend.transaction(commit=True) as cursor:
            cursor.execute(
                self.backend.sql(
                    "INSERT INTO {rl_heartbeats} (runner_id, beat_at) VALUES (%s, %s) "
                    "ON CONFLICT (runner_id) DO UPDATE SET beat_at = excluded.beat_at"
                ),
                [str(runner_id), at.timestamp()],
            )

    def recent(self, limit: int) -> list[RunnerRow]:
        """The runners that started last, newest first."""
        return self._rows(
            f"SELECT {_COLUMNS} FROM {{rl_runners}} r LEFT JOIN {{rl_heartbeats}} h "
            "ON h.runner_id = r.runner_id ORDER BY r.started_at DESC, r.runner_id DESC LIMIT %s",
            [limit],
        )

    def beating_since(self, since: datetime) -> list[RunnerRow]:
        """The runners not stopped whose last heartbeat is at or after ``since``. Read from the
        heartbeats' time index: the cost follows the live runners, not every runner there was."""
        self.fresh()
        return self.beating_as_read(since)

    def beating_as_read(self, since: datetime) -> list[RunnerRow]:
        """As ``beating_since``, from the runners view as it stands: for a read every tick,
        where a runner that joined or left a moment ago may show a tick later (the tick's other
        reads catch the view up)."""
        return self._select(_BEATING, [since.timestamp()])

    def _rows(self, statement: str, params: list[Any]) -> list[RunnerRow]:
        self.fresh()
        return self._select(statement, params)

    def _select(self, statement: str, params: list[Any]) -> list[RunnerRow]:
        with self.backend.transaction(commit=False) as cursor:
            cursor.execute(self.backend.sql(statement), params)
            return [RunnerRow.of(row) for row in cursor.fetchall()]

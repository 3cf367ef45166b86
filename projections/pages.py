"""Reads a page at a time: runs newest first (filtered by status, cleanup status and name),
and a run's log backwards from a position."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.projections.fresh_reads import FreshReads
from runledger.projections.queries import LogLine
from runledger.projections.schema import is_unresolved
from runledger.projections.statements import _OPEN
from runledger.projections.views.counts import COUNTS, TALLY

# domain/status.py's cleanup_status, over the same counts; tests/application/test_rules_once.py
# holds the two
# to each other for every combination.
CLEANUP_STATUS_SQL = """CASE WHEN c.entries = 0 THEN 'not_required'
    WHEN c.status = 'running' OR c.open > 0 THEN 'pending'
    WHEN c.unresolved = 0 THEN 'complete' ELSE 'incomplete' END"""

_COUNTED = f"""SELECT u.run_id, u.status, u.name, u.started_at,
        (SELECT COUNT(*) FROM {{rl_resources}} r WHERE r.run_id = u.run_id) AS entries,
        (SELECT COUNT(*) FROM {{rl_resources}} r WHERE r.run_id = u.run_id
            AND {is_unresolved()}) AS unresolved,
        (SELECT COUNT(*) FROM {{rl_resources}} r WHERE r.run_id = u.run_id
            AND {_OPEN}) AS open
    FROM {{rl_runs}} u"""


# The counts view's exact classes, and its ``open`` runs that have ended judged now: pending
# while an open entry has attempts left or a live claim (statements._OPEN), else incomplete.
# Those are read from the tally's index of them and the open-entries index, so the cost follows
# the runs cleanup is still busy with or that used their attempts, not the store. A probe a run
# (LIMIT 1), not EXISTS: PostgreSQL hashed an EXISTS, reading every open entry of the store,
# running runs' too (scripts/MEASUREMENTS.md, "Reads at 100,000 runs").
COUNTED_RUNS = f"""SELECT k.status, k.class, k.n FROM {{rl_counts}} k
    WHERE k.what = 'runs' AND k.n <> 0 AND NOT (k.class = 'open' AND k.status <> 'running')
    UNION ALL
    SELECT t.status, CASE WHEN (SELECT 1 FROM {{rl_resources}} r
            WHERE r.run_id = t.run_id AND {_OPEN} LIMIT 1) IS NULL
            THEN 'incomplete' ELSE 'pending' END,
        COUNT(*)
    FROM {{rl_run_tally}} t WHERE t.openish > 0 AND t.status <> 'running'
    GROUP BY 1, 2"""

COUNTED_ENTRIES = "SELECT status, n FROM {rl_counts} WHERE what = 'entries' AND n <> 0"


def _cleanup(status: str, klass: str) -> str:
    """A run's cleanup status from its status and its class in the counts view."""
    if klass == "none":
        return "not_required"
    return "pending" if status == "running" else klass


UNDER_WAY = "under_way"


@dataclass(frozen=True)
class RunFilter:
    status: str | None = None
    cleanup_status: str | None = None
    """A cleanup status, or ``under_way``: ended and still pending."""
    name: str | None = None


@dataclass(frozen=True)
class Cursor:
    """Where a page ended: the last run's start time and id (runs are listed newest first)."""

    started_at: float
    run_id: str


@dataclass(frozen=True)
class Where:
    """Which unresolved entries of ended runs a bulk cleanup selects."""

    module: str | None = None
    action: str | None = None
    run_status: str | None = None
    cleanup_status: str | None = None
    ended_after: datetime | None = None
    ended_before: datetime | None = None


@dataclass(frozen=True)
class LogLines:
    lines: list[LogLine]
    total: int
    earlier: bool


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Pages(FreshReads):
    """Reads for lists a page at a time and for counts; ``fresh`` brings the views level with
    the store first, as every read of the views does (fresh_reads.py)."""

    def runs(
        self,
        where: RunFilter,
        limit: int,
        after: Cursor | None,
        now: datetime,
        max_attempts: int,
    ) -> list[tuple[UUID, Cursor]]:
        """Up to ``limit`` runs after ``after``, newest first, each with its own cursor."""
        conditions: list[str] = []
        params: list[Any] = []
        if where.status is not None:
            conditions.append("c.status = %s")
            params.append(where.status)
        if where.name is not None:
            conditions.append("LOWER(c.name) LIKE LOWER(%s) ESCAPE '\\'")
            params.append(_like(where.name))
        if where.cleanup_status == UNDER_WAY:  # pending, less the runs still running
            conditions.append(f"({CLEANUP_STATUS_SQL}) = %s AND c.status <> %s")
            params += ["pending", "running"]
        elif where.cleanup_status is not None:
            conditions.append(f"({CLEANUP_STATUS_SQL}) = %s")
            params.append(where.cleanup_status)
        if after is not None:
            conditions.append("(c.started_at < %s OR (c.started_at = %s AND c.run_id < %s))")
            params += [after.started_at, after.started_at, after.run_id]
        # The counts are needed only to filter by cleanup status.
        source = (
            f"({_COUNTED}) c"
            if where.cleanup_status is not None
            else "(SELECT u.run_id, u.status, u.name, u.started_at FROM {rl_runs} u) c"
        )
        counted = [max_attempts, now.timestamp()] if where.cleanup_status is not None else []
        clause = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        statement = f"""SELECT c.run_id, c.started_at FROM {source} {clause}
            ORDER BY c.started_at DESC, c.run_id DESC LIMIT %s"""
        rows = self._rows(self._counted(statement), [*counted, *params, limit])
        return [(UUID(r["run_id"]), Cursor(float(r["started_at"]), r["run_id"])) for r in rows]

    def log(self, run_id: UUID, limit: int, before: int | None) -> LogLines:
        """A run's last ``limit`` lines before position ``before``, in store order."""
        bound = "AND position < %s" if before is not None else ""
        params: list[Any] = [str(run_id), *([before] if before is not None else [])]
        with self.one_catch_up():  # the lines and their count of one moment
            rows = self._rows(
                f"""SELECT * FROM {{rl_run_log}} WHERE run_id = %s {bound}
                    ORDER BY position DESC LIMIT %s""",
                [*params, limit + 1],
            )
            counted = self._rows(
                "SELECT COUNT(*) AS n FROM {rl_run_log} WHERE run_id = %s", [str(run_id)]
            )
        lines = [LogLine.of(row) for row in reversed(rows[:limit])]
        return LogLines(lines, int(counted[0]["n"]), len(rows) > limit)

    def _counted(self, statement: str) -> str:
        """The counts' tables named as this store spells them: they are not views' tables
        (projections/views/counts.py), which ``Backend.sql`` names."""
        for table in (COUNTS, TALLY):
            statement = statement.replace(f"{{{table}}}", self.backend.qualify(table))
        return statement

    def run_counts(self, now: datetime, max_attempts: int) -> list[tuple[str, str, int]]:
        """(run status, cleanup status, how many runs), from the counts view
        (projections/views/counts.py): its exact classes, and the runs whose open entries
        make them pending or not by the clock and the setting, judged now. One statement, so
        both parts are of one moment."""
        rows = self._rows(self._counted(COUNTED_RUNS), [max_attempts, now.timestamp()])
        found: dict[tuple[str, str], int] = {}
        for r in rows:
            key = (r["status"], _cleanup(r["status"], r["class"]))
            found[key] = found.get(key, 0) + int(r["n"])
        return [(status, cleanup, n) for (status, cleanup), n in sorted(found.items()) if n]

    def run_counts_scanned(self, now: datetime, max_attempts: int) -> list[tuple[str, str, int]]:
        """The same, counted from every run's entries: what the counts view must agree with."""
        rows = self._rows(
            f"""SELECT c.status, {CLEANUP_STATUS_SQL} AS cleanup, COUNT(*) AS n
                FROM ({_COUNTED}) c GROUP BY c.status, {CLEANUP_STATUS_SQL}""",
            [max_attempts, now.timestamp()],
        )
        return sorted((r["status"], r["cleanup"], int(r["n"])) for r in rows)

    def unresolved_counts(self) -> list[tuple[str, int]]:
        """(state, how many unresolved entries), from the counts view."""
        rows = self._rows(self._counted(COUNTED_ENTRIES), [])
        return sorted((r["status"], int(r["n"])) for r in rows)

    def unresolved_counts_scanned(self) -> list[tuple[str, int]]:
        rows = self._rows(
            f"""SELECT status, COUNT(*) AS n FROM {{rl_resources}}
                WHERE {is_unresolved("status")} GROUP BY status""",
            [],
        )
        return sorted((r["status"], int(r["n"])) for r in rows)

    def selected(self, where: Where, limit: int) -> list[Any]:
        """Up to ``limit`` unresolved entries (rows of rl_resources) of ended runs matching
        ``where``, in the order the runs ended."""
        conditions = [is_unresolved(), "u.status <> 'running'"]
        params: list[Any] = []
        for column, value in (
            ("r.module", where.module),
            ("r.action", where.action),
            ("u.status", where.run_status),
        ):
            if value is not None:
                conditions.append(f"{column} = %s")
                params.append(value)
        if where.ended_after is not None:
            conditions.append("u.ended_at >= %s")
            params.append(where.ended_after.timestamp())
        if where.ended_before is not None:
            conditions.append("u.ended_at < %s")
            params.append(where.ended_before.timestamp())
        return self._rows(
            f"""SELECT r.* FROM {{rl_resources}} r JOIN {{rl_runs}} u ON u.run_id = r.run_id
                WHERE {" AND ".join(conditions)}
                ORDER BY u.ended_at, r.run_id, r.recorded_at, r.entry_id LIMIT %s""",
            [*params, limit],
        )

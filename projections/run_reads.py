"""Reads of runs: one or several by id, the ones the sweep or the advance leg works next."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from runledger.projections.fresh_reads import FreshReads
from runledger.projections.rows import RunRow
from runledger.projections.statements import CANDIDATES, runs_statement


class RunReads(FreshReads):
    def run(self, run_id: UUID, now: datetime, max_attempts: int) -> RunRow | None:
        found = self.runs([run_id], now, max_attempts)
        return found[0] if found else None

    def runs(self, run_ids: list[UUID], now: datetime, max_attempts: int) -> list[RunRow]:
        if not run_ids:
            return []
        among, ids = self.backend.among([str(r) for r in run_ids])
        rows = self._rows(runs_statement(among), [max_attempts, now.timestamp(), *ids, *ids])
        return [RunRow.of(row) for row in rows]

    def candidate_runs(self, now: datetime, max_attempts: int, limit: int) -> list[UUID]:
        """Runs with something the sweep may work now: terminal runs with retryable entries,
        and running runs holding a lease past its ``until``, the longest waiting first. Served by
        the open-entries index."""
        stamp = now.timestamp()
        rows = self._rows(CANDIDATES, [stamp, max_attempts, stamp, stamp, limit], by_index=True)
        return [UUID(row["run_id"]) for row in rows]

    def step_keys(self, run_id: UUID) -> list[UUID]:
        rows = self._rows("SELECT step_key FROM {rl_steps} WHERE run_id = %s", [str(run_id)])
        return [UUID(row["step_key"]) for row in rows]

    def running_runs(self, limit: int) -> list[UUID]:
        rows = self._rows(
            "SELECT run_id FROM {rl_runs} WHERE status = 'running' "
            "ORDER BY started_at, run_id LIMIT %s",
            [limit],
        )
        return [UUID(row["run_id"]) for row in rows]

    def running_runs_after(self, after: UUID | None, limit: int) -> list[UUID]:
        """Running runs in start order, from just after ``after``: the advance leg's round robin."""
        if after is None:
            return self.running_runs(limit)
        rows = self._rows(
            """SELECT u.run_id FROM {rl_runs} u, {rl_runs} a
            WHERE a.run_id = %s AND u.status = 'running'
              AND (u.started_at > a.started_at
                   OR (u.started_at = a.started_at AND u.run_id > a.run_id))
            ORDER BY u.started_at, u.run_id LIMIT %s""",
            [str(after), limit],
        )
        return [UUID(row["run_id"]) for row in rows]

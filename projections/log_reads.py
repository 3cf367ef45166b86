"""Reads of a run's log."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.projections.fresh_reads import FreshReads
from runledger.projections.rows import LogLine


class LogReads(FreshReads):
    def log(
        self, run_id: UUID, *, limit: int | None = None, since: datetime | None = None
    ) -> list[LogLine]:
        """A run's log in store order: its last ``limit`` lines at or after ``since``."""
        since_clause = "AND at >= %s" if since is not None else ""
        limit_clause = "LIMIT %s" if limit is not None else ""
        params: list[Any] = [str(run_id)]
        params += [since.timestamp()] if since is not None else []
        params += [limit] if limit is not None else []
        # The last lines are read newest first through the (run_id, position) index, then put
        # back in store order, so a run of 10,000 lines costs what a run of 200 does.
        rows = self._rows(
            f"""SELECT * FROM (SELECT * FROM {{rl_run_log}} WHERE run_id = %s {since_clause}
                ORDER BY position DESC {limit_clause}) t ORDER BY position""",
            params,
        )
        return [LogLine.of(row) for row in rows]

    def log_size(self, run_id: UUID) -> int:
        """How many lines a run's log holds."""
        rows = self._rows("SELECT COUNT(*) AS n FROM {rl_run_log} WHERE run_id = %s", [str(run_id)])
        return int(rows[0]["n"])

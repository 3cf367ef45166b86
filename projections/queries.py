"""Reads over the projections, each of them fresh: whatever was saved before a read, in this
process or another, is in its answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND
from runledger.projections.backend import Backend
from runledger.projections.rows import EntryRow, LogLine, RunRow
from runledger.projections.schema import is_unresolved
from runledger.projections.statements import (
    CANDIDATES,
    PAGE,
    retryable_pages_statement,
    runs_statement,
)

__all__ = ["EntryRow", "LogLine", "Queries", "RunRow"]


class Queries:
    """Reads over the projections. Every answer is a function of the projected rows.

    ``fresh`` (the projector's catch-up) runs before every read: read-your-writes is kept here,
    once, rather than by every caller remembering to catch the views up first.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        fresh: Callable[[], object],
        seen: Callable[[str, list[Any]], object] = lambda table, rows: None,
    ) -> None:
        self.backend = backend
        self.fresh = fresh
        self.seen = seen
        """Told the whole rows a read found, by table: the views fold from them (known.py)."""
        self._caught_up = threading.local()

    @contextmanager
    def one_catch_up(self) -> Iterator[None]:
        """This thread's reads in the block share one catch-up, made as it starts: fresh as of
        that moment. A sweep reads a pass's work before writing any of it, and a catch-up before
        each of its reads only asked the store again whether anything new had come."""
        self.fresh()
        self._caught_up.held = True
        try:
            yield
        finally:
            self._caught_up.held = False

    def _rows(self, statement: str, params: list[Any], *, by_index: bool = False) -> list[Any]:
        if not getattr(self._caught_up, "held", False):
            self.fresh()
        return self.backend.select(self.backend.sql(statement), params, by_index=by_index)

    def run(self, run_id: UUID, now: datetime, max_attempts: int) -> RunRow | None:
        found = self.runs([run_id], now, max_attempts)
        return found[0] if found else None

    def runs(self, run_ids: list[UUID], now: datetime, max_attempts: int) -> list[RunRow]:
        if not run_ids:
            return []
        rows = self._rows(
            runs_statement(self.backend.markers(len(run_ids))),
            [max_attempts, now.timestamp(), *[str(r) for r in run_ids]],
        )
        return [RunRow.of(row) for row in rows]

    def entries(self, run_id: UUID) -> list[EntryRow]:
        rows = self._rows(
            "SELECT * FROM {rl_resources} WHERE run_id = %s ORDER BY recorded_at, entry_id",
            [str(run_id)],
        )
        return [EntryRow.of(row) for row in rows]

    def entry(self, entry_id: UUID) -> EntryRow | None:
        rows = self._rows("SELECT * FROM {rl_resources} WHERE entry_id = %s", [str(entry_id)])
        return EntryRow.of(rows[0]) if rows else None

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

    def candidate_runs(self, now: datetime, max_attempts: int, limit: int) -> list[UUID]:
        """Runs with something the sweep may work now: terminal runs with retryable entries,
        and running runs holding a lease past its ``until``, the longest waiting first. Served by
        the open-entries index."""
        stamp = now.timestamp()
        rows = self._rows(CANDIDATES, [stamp, max_attempts, stamp, stamp, limit], by_index=True)
        return [UUID(row["run_id"]) for row in rows]

    def retryable_entries(
        self,
        run_id: UUID,
        now: datetime,
        max_attempts: int,
        *,
        overdue_leases_only: bool,
        limit: int = PAGE,
    ) -> list[EntryRow]:
        """A bounded page of what one pass may work: a sweep's memory does not grow with the
        run (a sweep holds one page per run of its batch), and a group cut at the page's end is
        simply finished by the next pass."""
        pages = self.retryable_pages([(run_id, overdue_leases_only)], now, max_attempts, limit)
        return [EntryRow.of(row) for row in pages[run_id]]

    def retryable_pages(
        self, runs: list[tuple[UUID, bool]], now: datetime, max_attempts: int, limit: int = PAGE
    ) -> dict[UUID, list[Any]]:
        """``retryable_entries`` for several runs (each with its ``overdue_leases_only``) in one
        statement, as rows for ``EntryRow.of``: a row that cannot be read then fails its own
        run's pass, not every run's."""
        if not runs:
            return {}
        statement, params = retryable_pages_statement(
            runs, now, max_attempts, limit, lateral=self.backend.lateral
        )
        pages: dict[UUID, list[Any]] = {run_id: [] for run_id, _ in runs}
        rows = self._rows(statement, params)
        for row in rows:
            pages[UUID(row["run_id"])].append(row)
        self.seen("rl_resources", rows)
        return pages

    def unresolved_entries(self, run_id: UUID) -> list[EntryRow]:
        rows = self._rows(
            f"""SELECT * FROM {{rl_resources}} r WHERE r.run_id = %s
            AND {is_unresolved()} ORDER BY r.recorded_at, r.entry_id""",
            [str(run_id)],
        )
        return [EntryRow.of(row) for row in rows]

    def live_named_entries(self, module: str) -> list[EntryRow]:
        rows = self._rows(
            f"""SELECT * FROM {{rl_resources}} r WHERE r.module = %s
            AND {is_unresolved()} AND r.status IN ('live', 'failing')
            AND r.kind <> '{PLACEHOLDER_KIND}' AND r.kind <> '{LEASE_KIND}'
            ORDER BY r.recorded_at, r.entry_id""",
            [module],
        )
        return [EntryRow.of(row) for row in rows]

    def unresolved_matching(self, module: str, kind: str, ref: str) -> list[EntryRow]:
        rows = self._rows(
            f"""SELECT * FROM {{rl_resources}} r WHERE r.module = %s AND r.kind = %s
            AND r.ref = %s AND {is_unresolved()}""",
            [module, kind, ref],
        )
        return [EntryRow.of(row) for row in rows]

    def entries_named(self, text: str) -> list[EntryRow]:
        kind, _, ref = text.partition(":")
        rows = self._rows(
            "SELECT * FROM {rl_resources} WHERE ref = %s OR (kind = %s AND ref = %s) "
            "ORDER BY recorded_at LIMIT 20",
            [text, kind, ref],
        )
        return [EntryRow.of(row) for row in rows]

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

    def modules_with_live_entries(self) -> list[str]:
        rows = self._rows(
            f"""SELECT DISTINCT r.module FROM {{rl_resources}} r
            WHERE {is_unresolved()} ORDER BY r.module""",
            [],
        )
        return [row["module"] for row in rows]

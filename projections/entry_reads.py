"""Reads of entries (rows of rl_resources): a run's, one by id, the ones a pass may work, the
unresolved ones by module, kind or ref."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND
from runledger.projections.fresh_reads import FreshReads
from runledger.projections.rows import EntryRow
from runledger.projections.schema import is_unresolved
from runledger.projections.statements import PAGE, retryable_pages_statement

NAMED_AT_MOST = 20
"""The most entries one ref finds: enough to refuse an ambiguous one by its first few."""


class EntryReads(FreshReads):
    def entries(self, run_id: UUID) -> list[EntryRow]:
        rows = self._rows(
            "SELECT * FROM {rl_resources} WHERE run_id = %s ORDER BY recorded_at, entry_id",
            [str(run_id)],
        )
        return [EntryRow.of(row) for row in rows]

    def entry(self, entry_id: UUID) -> EntryRow | None:
        rows = self._rows("SELECT * FROM {rl_resources} WHERE entry_id = %s", [str(entry_id)])
        return EntryRow.of(rows[0]) if rows else None

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
            "ORDER BY recorded_at LIMIT %s",
            [text, kind, ref, NAMED_AT_MOST],
        )
        return [EntryRow.of(row) for row in rows]

    def modules_with_live_entries(self) -> list[str]:
        rows = self._rows(
            f"""SELECT DISTINCT r.module FROM {{rl_resources}} r
            WHERE {is_unresolved()} ORDER BY r.module""",
            [],
        )
        return [row["module"] for row in rows]

"""The answers every front end gives about runs and their entries, read from the views."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from uuid import UUID

from runledger.application.errors import BadQuery, BadRequest, NotFound
from runledger.application.reading.schemas import runs as schema
from runledger.application.reading.shapes import entry, log_line, run_summary
from runledger.application.services.runs import Runs
from runledger.application.services.sweep.verdicts import Retried, Summary
from runledger.application.store.ledger_app import Streams
from runledger.domain.resource import Resource
from runledger.domain.run import ended
from runledger.projections.pages import Cursor, Pages, RunFilter
from runledger.projections.queries import Queries, RunRow

MAX_PAGE = 500
RUN_CURSOR = (
    r"^[0-9]{1,17}(\.[0-9]{1,17})?(e[+-]?[0-9]{1,2})?"
    r"_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)
"""A page of runs ends at a run: its start time as the store holds it (a float, written so
that it reads back the same) and its id. Any text of this form is a place in the list."""


@dataclass(frozen=True, kw_only=True)
class Answers:
    """Runs, entries and logs as the API's schemas say them; `max_attempts` is the setting
    that makes an entry's failures final."""

    queries: Queries
    pages: Pages
    runs: Runs
    streams: Streams
    clock: Callable[[], datetime]
    max_attempts: int

    def run_page(self, where: RunFilter, limit: int, cursor: str | None) -> schema.RunPage:
        if not 1 <= limit <= MAX_PAGE:
            raise BadRequest(f"limit: must be between 1 and {MAX_PAGE}")
        now = self.clock()
        found = self.pages.runs(where, limit + 1, _cursor(cursor), now, self.max_attempts)
        ids = [i for i, _ in found[:limit]]
        rows = {row.run_id: row for row in self.queries.runs(ids, now, self.max_attempts)}
        items = [run_summary(rows[i]) for i in ids if i in rows]
        more = len(found) > limit
        return schema.RunPage(
            items=items, next_cursor=_token(found[limit - 1][1]) if more else None
        )

    def known_run(self, run_id: UUID) -> RunRow:
        row = self.queries.run(run_id, self.clock(), self.max_attempts)
        if row is None:
            raise NotFound(f"no run {run_id}")
        return row

    def run_detail(self, run_id: UUID) -> schema.RunDetail:
        row = self.known_run(run_id)
        try:
            phases = self.runs.describe(run_id)
        except BadRequest:  # a run started without a spec (stores written before specs) has none
            phases = []
        running = not ended(row.status)
        entries = sorted(self.queries.entries(run_id), key=lambda e: e.status)
        kept = self.kept_by([e.entry_id for e in entries if e.status == "kept"])
        return schema.RunDetail(
            run=run_summary(row),
            phases=[
                schema.Phase(
                    phase=p.phase,
                    headline=p.headline,
                    why_not_advanced=p.why_not_advanced if running else None,
                )
                for p in phases
            ],
            entries=[
                schema.EntryGroup(
                    state=state,
                    count=len(group),
                    entries=[entry(e, kept.get(e.entry_id)) for e in group],
                )
                for state, group in ((s, list(g)) for s, g in groupby(entries, lambda e: e.status))
            ],
        )

    def kept_by(self, entry_ids: list[UUID]) -> dict[UUID, tuple[str, str | None]]:
        """Who kept each of these entries and why, as their Kept events say (the rows hold
        neither)."""
        loaded = self.streams.load(Resource, entry_ids)
        return {i: (e.kept_by, e.kept_reason) for i, e in loaded.items() if e.kept_by is not None}

    def known_entry(self, entry_id: UUID) -> schema.Entry:
        row = self.queries.entry(entry_id)
        if row is None:
            raise NotFound(f"no ledger entry {entry_id}")
        kept = self.kept_by([entry_id]).get(entry_id) if row.status == "kept" else None
        return entry(row, kept)

    def entries_named(self, text: str) -> list[schema.Entry]:
        """The entries whose ref, or kind:ref, is ``text``: the first 20, oldest first."""
        rows = self.queries.entries_named(text)
        kept = self.kept_by([row.entry_id for row in rows if row.status == "kept"])
        return [entry(row, kept.get(row.entry_id)) for row in rows]

    def log_page(self, run_id: UUID, limit: int, before: int | None) -> schema.LogPage:
        if not 1 <= limit <= MAX_PAGE * 10:
            raise BadRequest(f"limit: must be between 1 and {MAX_PAGE * 10}")
        self.known_run(run_id)
        found = self.pages.log(run_id, limit, before)
        first = found.lines[0].position if found.lines else None
        return schema.LogPage(
            run_id=run_id,
            lines=[log_line(line) for line in found.lines],
            total=found.total,
            earlier=first if found.earlier else None,
        )

    def cleanup_summary(self, run_id: UUID, summary: Summary) -> schema.CleanupSummary:
        row = self.known_run(run_id)
        return schema.CleanupSummary(
            run_id=run_id,
            by=summary.by,
            attempted=summary.attempted,
            reverted=summary.reverted,
            drifted=summary.drifted,
            failed=summary.failed,
            remaining=row.unresolved,
            cleanup_status=row.cleanup_status,
            held=[schema.Held.model_validate(h) for h in summary.held]
            if isinstance(summary, Retried)
            else [],
        )


def _token(cursor: Cursor) -> str:
    return f"{cursor.started_at!r}_{cursor.run_id}"


def _cursor(token: str | None) -> Cursor | None:
    if token is None:
        return None
    if re.fullmatch(RUN_CURSOR, token) is None:
        raise BadQuery("cursor: not a cursor this API gave out")
    started, run_id = token.split("_")
    return Cursor(float(started), run_id)

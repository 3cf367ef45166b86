"""The answers the API and the CLI's --json give, built from the services' reads."""

from __future__ import annotations

import base64
import binascii
import contextlib
from itertools import groupby
from uuid import UUID

from runledger.application.errors import BadQuery, BadRequest, NotFound, ProjectionStuck
from runledger.application.reading.schemas import bulk, fleet, history, runs
from runledger.application.runledger import Runledger
from runledger.application.services.bulk import Plan
from runledger.application.services.history import Replay, Stepping
from runledger.application.services.sweep.verdicts import Retried, Summary
from runledger.domain.resource import Resource
from runledger.domain.run import ended
from runledger.projections.pages import Cursor, RunFilter, Where
from runledger.projections.queries import EntryRow, LogLine, RunRow

MAX_PAGE = 500


def run_summary(row: RunRow) -> runs.RunSummary:
    return runs.RunSummary.model_validate(row)


def run_page(rl: Runledger, where: RunFilter, limit: int, cursor: str | None) -> runs.RunPage:
    if not 1 <= limit <= MAX_PAGE:
        raise BadRequest(f"limit: must be between 1 and {MAX_PAGE}")
    now, attempts = rl.clock(), rl.settings.max_revert_attempts
    found = rl.pages.runs(where, limit + 1, _cursor(cursor), now, attempts)
    rows = {
        row.run_id: row for row in rl.queries.runs([i for i, _ in found[:limit]], now, attempts)
    }
    items = [run_summary(rows[i]) for i, _ in found[:limit] if i in rows]
    more = len(found) > limit
    return runs.RunPage(items=items, next_cursor=_token(found[limit - 1][1]) if more else None)


def _token(cursor: Cursor) -> str:
    raw = f"{cursor.started_at!r}|{cursor.run_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(token: str | None) -> Cursor | None:
    if token is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        started, run_id = raw.split("|", 1)
        return Cursor(float(started), str(UUID(run_id)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise BadQuery("cursor: not a cursor this API gave out") from None


def known_run(rl: Runledger, run_id: UUID) -> RunRow:
    row = rl.queries.run(run_id, rl.clock(), rl.settings.max_revert_attempts)
    if row is None:
        raise NotFound(f"no run {run_id}")
    return row


def run_detail(rl: Runledger, run_id: UUID) -> runs.RunDetail:
    row = known_run(rl, run_id)
    try:
        phases = rl.runs.describe(run_id)
    except BadRequest:  # a run started without a spec (stores written before specs) has none
        phases = []
    running = not ended(row.status)
    entries = sorted(rl.queries.entries(run_id), key=lambda e: e.status)
    kept = kept_by(rl, [e.entry_id for e in entries if e.status == "kept"])
    return runs.RunDetail(
        run=run_summary(row),
        phases=[
            runs.Phase(
                phase=p.phase,
                headline=p.headline,
                why_not_advanced=p.why_not_advanced if running else None,
            )
            for p in phases
        ],
        entries=[
            runs.EntryGroup(
                state=state,
                count=len(group),
                entries=[entry(e, kept.get(e.entry_id)) for e in group],
            )
            for state, group in ((s, list(g)) for s, g in groupby(entries, lambda e: e.status))
        ],
    )


def kept_by(rl: Runledger, entry_ids: list[UUID]) -> dict[UUID, tuple[str, str | None]]:
    """Who kept each of these entries and why, as their Kept events say (the rows hold
    neither)."""
    loaded = rl.ledger.streams.load(Resource, entry_ids)
    return {i: (e.kept_by, e.kept_reason) for i, e in loaded.items() if e.kept_by is not None}


def entry(row: EntryRow, kept: tuple[str, str | None] | None = None) -> runs.Entry:
    return runs.Entry(
        entry_id=row.entry_id,
        run_id=row.run_id,
        name=row.name,
        kind=row.kind,
        ref=row.ref,
        module=row.module,
        action=row.action,
        step=row.step,
        state=row.status,
        attempts=row.attempts,
        terminal=row.terminal,
        last_error=row.last_error,
        next_attempt_at=row.next_attempt,
        claimed_by=row.claim_worker,
        claim_expires_at=row.claim_expires,
        kept_by=kept[0] if kept else None,
        kept_reason=kept[1] if kept else None,
        payload=row.payload,
        member_key=row.member_key,
        until=row.until,
        drift_current=row.drift_current,
        version=row.version,
    )


def known_entry(rl: Runledger, entry_id: UUID) -> runs.Entry:
    row = rl.queries.entry(entry_id)
    if row is None:
        raise NotFound(f"no ledger entry {entry_id}")
    return entry(row, kept_by(rl, [entry_id]).get(entry_id) if row.status == "kept" else None)


def log_page(rl: Runledger, run_id: UUID, limit: int, before: int | None) -> runs.LogPage:
    if not 1 <= limit <= MAX_PAGE * 10:
        raise BadRequest(f"limit: must be between 1 and {MAX_PAGE * 10}")
    known_run(rl, run_id)
    found = rl.pages.log(run_id, limit, before)
    first = found.lines[0].position if found.lines else None
    return runs.LogPage(
        run_id=run_id,
        lines=[log_line(line) for line in found.lines],
        total=found.total,
        earlier=first if found.earlier else None,
    )


def log_line(line: LogLine) -> runs.LogLine:
    return runs.LogLine(position=line.position, at=line.at, kind=line.kind, detail=line.detail)


def cleanup_summary(rl: Runledger, run_id: UUID, summary: Summary) -> runs.CleanupSummary:
    row = known_run(rl, run_id)
    return runs.CleanupSummary(
        run_id=run_id,
        by=summary.by,
        attempted=summary.attempted,
        reverted=summary.reverted,
        drifted=summary.drifted,
        failed=summary.failed,
        remaining=row.unresolved,
        cleanup_status=row.cleanup_status,
        held=[runs.Held.model_validate(h) for h in summary.held]
        if isinstance(summary, Retried)
        else [],
    )


def replay(found: Replay) -> history.Replay:
    return history.Replay.model_validate(found)


def stepping(found: Stepping) -> history.EntryHistory:
    return history.EntryHistory(
        entry_id=found.entry_id,
        name=found.name,
        total=found.total,
        frames=[
            history.Frame(
                version=f.version,
                event=f.event,
                at=f.at,
                state=f.state,
                changed={k: history.Change(before=b, after=a) for k, (b, a) in f.changed.items()},
                values=None if f.values is None else history.SideBySide(**f.values),
                actor=f.actor,
            )
            for f in found.frames
        ],
    )


def modules(rl: Runledger) -> list[fleet.Module]:
    return [fleet.Module.model_validate(m) for m in rl.modules]


def runners(rl: Runledger) -> list[fleet.Runner]:
    return [fleet.Runner.model_validate(r) for r in rl.fleet.listing(rl.clock())]


def projections(rl: Runledger) -> list[fleet.Projection]:
    with contextlib.suppress(ProjectionStuck):  # the trial below says where
        rl.projector.catch_up()
    stuck = {s.view: s for s in rl.projector.trial()}
    head = rl.projector.head()
    return [
        fleet.Projection(
            name=name,
            position=position,
            lag=max(head - position, 0),
            stuck_at=stuck[name].position if name in stuck else None,
            error=stuck[name].reason if name in stuck else None,
        )
        for name, position in sorted(rl.projector.positions().items())
    ]


def where(selector: bulk.Selector) -> Where:
    return Where(**selector.model_dump())


def plan(selector: bulk.Selector, found: Plan) -> bulk.Plan:
    return bulk.Plan(
        where=selector,
        fingerprint=found.fingerprint,
        entries=sum(len(r.entries) for r in found.runs),
        runs=[
            bulk.PlannedRun(
                run_id=r.run_id,
                name=r.name,
                status=r.status,
                cleanup_status=r.cleanup_status,
                entries=[
                    bulk.PlannedEntry(
                        entry_id=p.entry.entry_id,
                        name=p.entry.name,
                        module=p.entry.module,
                        action=p.entry.action,
                        state=p.entry.status,
                        attempts=p.entry.attempts,
                        last_error=p.entry.last_error,
                        ask=p.ask,
                        held=None if p.held is None else runs.Held.model_validate(p.held),
                    )
                    for p in r.entries
                ],
            )
            for r in found.runs
        ],
    )

"""The shapes every front end shows, made from the services' values: pure conversions, no
reads."""

from __future__ import annotations

from runledger.application.reading.schemas import bulk, fleet, history, runs
from runledger.application.services.bulk import Plan
from runledger.application.services.history import Replay, Stepping
from runledger.projections.errors import Stuck
from runledger.projections.pages import Where
from runledger.projections.queries import EntryRow, LogLine, RunRow


def run_summary(row: RunRow) -> runs.RunSummary:
    return runs.RunSummary.model_validate(row)


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


def log_line(line: LogLine) -> runs.LogLine:
    return runs.LogLine(position=line.position, at=line.at, kind=line.kind, detail=line.detail)


def projection(name: str, position: int, head: int, stuck: Stuck | None) -> fleet.Projection:
    """One view's place behind the store's head, and the event it stopped at, if it did."""
    return fleet.Projection(
        name=name,
        position=position,
        lag=max(head - position, 0),
        stuck_at=None if stuck is None else stuck.position,
        stuck_event=None
        if stuck is None
        else f"{stuck.topic} {stuck.originator_id} v{stuck.version}",
        error=None if stuck is None else stuck.reason,
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

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from runledger.application.modules.answers import Verdict
from runledger.application.services.holds import Held
from runledger.application.services.retry_at import retry_at
from runledger.application.services.sweep.groups import Group
from runledger.domain.backoff import Backoff
from runledger.domain.errors import DomainError
from runledger.domain.resource import FailureMode, Resource
from runledger.domain.runlog import LogEntry, LogKind

log = logging.getLogger("runledger.cleanup")


@dataclass
class Summary:
    """What one pass over one run attempted and what came of it."""

    attempted: int = 0
    reverted: int = 0
    drifted: int = 0
    failed: int = 0
    remaining: int = 0
    by: str = ""

    def add(self, counts: Summary) -> None:
        """Count a group whose verdict is saved; what it gave back no longer remains."""
        self.attempted += counts.attempted
        self.reverted += counts.reverted
        self.drifted += counts.drifted
        self.failed += counts.failed
        self.remaining -= counts.reverted

    def then(self, later: Summary) -> Summary:
        """Two passes over one run as one: their counts added, what remains as the later left it."""
        return Summary(
            attempted=self.attempted + later.attempted,
            reverted=self.reverted + later.reverted,
            drifted=self.drifted + later.drifted,
            failed=self.failed + later.failed,
            remaining=later.remaining,
            by=later.by,
        )


@dataclass
class Retried(Summary):
    """A person's retry of one run: its pass, and the lease entries it left as they are because
    another live run holds their target (apart from Summary, so a sweep's line never lists them)."""

    held: list[Held] = field(default_factory=list)


@dataclass(frozen=True)
class Judged:
    """One call's verdict applied to its group in memory, with its log line, awaiting its save."""

    group: Group
    verdict: Verdict
    line: LogEntry
    counts: Summary


def judge_group(
    run_id: UUID,
    group: Group,
    verdict: Verdict,
    worker: str,
    now: datetime,
    backoff: Backoff,
    max_attempts: int,
) -> Judged:
    """Apply one call's verdict to every entry the call covered, and write its log line."""
    counts = Summary()
    names = []
    for entry in group.claimed.values():
        names.append(f"{entry.kind}:{entry.ref}")
        counts.attempted += 1
        try:
            _judge(entry, verdict, worker, group.what, now, counts, backoff, max_attempts)
        except DomainError as error:
            log.warning("verdict on %s not applied: %s", entry.id, error)
    first = min(group.claimed.values(), key=lambda e: str(e.id))
    detail: dict[str, Any] = {
        "what": group.what,
        "outcome": verdict.outcome,
        "resources": sorted(names),
        "attempt": first.attempts,
        "by": worker,
    }
    if verdict.error:
        detail["error"] = verdict.error
    if verdict.failed:
        detail["failed"] = sorted(verdict.failed)
    if verdict.note:
        detail["note"] = verdict.note
    if first.next_attempt_at is not None:
        detail["next_attempt_at"] = first.next_attempt_at.isoformat(timespec="seconds")
    kind: LogKind = (
        "cleanup.reverted"
        if verdict.outcome == "done" and not verdict.failed
        else ("cleanup.drifted" if verdict.outcome == "drifted" else "cleanup.failed")
    )
    # The verdict's own version names this call: an attempt number repeats after a reset.
    line = LogEntry(
        key=f"call|{first.id}|{first.version}",
        run_id=run_id,
        kind=kind,
        detail=detail,
        at=now,
    )
    return Judged(group, verdict, line, counts)


def _judge(
    entry: Resource,
    verdict: Verdict,
    worker: str,
    what: str,
    now: datetime,
    counts: Summary,
    backoff: Backoff,
    max_attempts: int,
) -> None:
    attempt = entry.attempts
    if verdict.outcome == "done" and entry.ref not in verdict.failed:
        entry.mark_reverted(worker, attempt, now, note=verdict.note)
        counts.reverted += 1
        return
    if verdict.outcome == "drifted":
        entry.mark_drifted(worker, attempt, verdict.current, verdict.error or "drifted", now)
        counts.drifted += 1
        return
    if verdict.outcome == "done":
        mode: FailureMode = "retry"
        error = f'{what} could not give "{entry.ref}" back'
    else:
        mode = "terminal" if verdict.outcome == "terminal" else "retry"
        error = verdict.error or "refused"
    later = retry_at(backoff, attempt, max_attempts, now)
    entry.fail_revert(worker, attempt, mode, error, now, next_attempt_at=later)
    counts.failed += 1


def swept_line(run_id: UUID, summary: Summary, at: datetime) -> LogEntry:
    """The one log line a pass over a run ends with."""
    return LogEntry(
        key=f"swept|{run_id}|{uuid4()}",
        run_id=run_id,
        kind="cleanup.swept",
        detail=asdict(summary),
        at=at,
    )

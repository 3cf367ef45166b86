"""The answers to a person's decisions the API and the CLI's --json give (the counterpart of
answers.py for keeping and retrying one entry)."""

from __future__ import annotations

from runledger.application.errors import NotFound
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas import decisions as schema
from runledger.application.reading.schemas.runs import Held
from runledger.application.services.decisions import Kept, RetriedEntry


def kept(answers: Answers, found: Kept) -> schema.Kept:
    row = answers.known_run(found.run_id)
    return schema.Kept(
        run_id=found.run_id,
        by=found.by,
        reason=found.reason,
        kept=[schema.KeptEntry(entry_id=i, name=n) for i, n in found.entries.items()],
        cleanup_status=row.cleanup_status,
        remaining=row.unresolved,
    )


def retried(answers: Answers, found: RetriedEntry) -> schema.EntryRetried:
    row = answers.known_run(found.run_id)
    entry = answers.queries.entry(found.entry_id)
    if entry is None:
        raise NotFound(f"no ledger entry {found.entry_id}")
    summary = found.retried
    return schema.EntryRetried(
        run_id=found.run_id,
        entry_id=found.entry_id,
        name=found.name,
        by=summary.by,
        state=entry.status,
        attempts=entry.attempts,
        last_error=entry.last_error,
        attempted=summary.attempted,
        reverted=summary.reverted,
        drifted=summary.drifted,
        failed=summary.failed,
        held=[Held.model_validate(h) for h in summary.held],
        cleanup_status=row.cleanup_status,
        remaining=row.unresolved,
    )

"""What no production path does on its own, for the few states only a worker that died or a
hand-written history reaches. Each writes through the domain aggregate, as the path it stands
in for would, and is named for what it stands in for.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.runledger import Runledger
from tests.support.playing import entry_of


def claim(
    rl: Runledger, entry_id: UUID, worker: str, expires_at: datetime, max_attempts: int
) -> bool:
    """A worker claims one entry for a revert attempt, as a sweep does right before its call,
    and then dies before any verdict. Answers whether the claim won: of racing claims on one
    entry, the store lets exactly one be saved."""
    entry = entry_of(rl, entry_id)
    now = rl.clock()
    if not entry.retryable(now, max_attempts):
        return False
    entry.claim_revert(worker, now, expires_at, max_attempts)
    try:
        rl.app.save(entry)
    except IntegrityError:
        return False
    return True


def keep(rl: Runledger, entry_id: UUID, by: str) -> None:
    """A person keeps one entry in the world. Production keeps entries only all at once, when a
    person cancels a running run without cleanup; a history can still show one kept alone."""
    entry = entry_of(rl, entry_id)
    entry.keep(by, rl.clock())
    rl.app.save(entry)

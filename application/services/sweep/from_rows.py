"""Entries as the sweep claims them: built from their projected rows, not replayed.

The resources view holds every field of an entry's aggregate and the fate its events moved, at
the version it last projected. An aggregate built from that row and saved with a new event is
checked like a replayed one: the event's version is the row's plus one, and the store refuses it
(IntegrityError) when the stream has moved past the row, so a stale row can lose a race but
never win one. The events saved, and so every entry's history, are the same either way.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.domain import Snapshot
from eventsourcing.utils import get_topic

from runledger.domain.fate import Fate
from runledger.domain.resource import Resource
from runledger.projections.rows import EntryRow

_TOPIC = get_topic(Resource)


def entry_from_row(row: EntryRow) -> Resource:
    """The entry at the row's version. Only an open entry (retryable, or under a claim) may be
    built this way: ``kept_by``, ``kept_reason`` and ``note`` are written only by events that
    resolve it."""
    state: dict[str, Any] = {
        # The library's own wall-clock stamps are in no row; nothing in runledger reads them.
        "_created_on": None,
        "_modified_on": None,
        "run_id": row.run_id,
        "step": row.step,
        "kind": row.kind,
        "ref": row.ref,
        "module": row.module,
        "action": row.action,
        "idempotency_key": row.idempotency_key,
        "payload": row.payload,
        "member_key": row.member_key,
        "until": row.until,
        "fate": Fate(
            state=row.status,  # type: ignore[arg-type]
            attempts=row.attempts,
            terminal=row.terminal,
            claim_worker=row.claim_worker,
            claim_expires_at=row.claim_expires,
            next_attempt_at=row.next_attempt,
            last_error=row.last_error,
            drift_current=row.drift_current,
        ),
        "kept_by": None,
        "kept_reason": None,
        "note": None,
    }
    snapshot = Snapshot(
        originator_id=row.entry_id,
        originator_version=row.version,
        timestamp=Snapshot.create_timestamp(),
        topic=_TOPIC,
        state=state,
    )
    entry = snapshot.mutate(None)
    if not isinstance(entry, Resource):
        raise TypeError(f"{row.entry_id} did not build a Resource")
    return entry

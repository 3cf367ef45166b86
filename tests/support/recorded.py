"""A ledger entry recorded by hand, for tests of the store itself (its insert, its NOTIFY, who
projects it): a creature of the `game` module on a run of its own."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from runledger.domain.resource import Resource

AT = datetime(2026, 12, 3, tzinfo=UTC)


def entry(ref: str) -> Resource:
    return Resource(
        run_id=uuid.uuid4(),
        step="spawn",
        kind="creature",
        ref=ref,
        module="game",
        action=None,
        idempotency_key="k",
        payload=None,
        member_key=None,
        until=None,
        at=AT,
    )

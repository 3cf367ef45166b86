"""What a dispatch's answer names, as ledger entries: one per natural key however often the
answer names it, each carrying its placeholder's run, step, module and key; and the log line of
an answer that came after its deadline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from runledger.application.modules.answers import NamedResource
from runledger.domain.resource import Resource
from runledger.domain.runlog import LogEntry


def new_entries(
    placeholder: Resource,
    named: Sequence[NamedResource],
    ids: Sequence[UUID],
    existing: Mapping[UUID, Resource],
    at: datetime,
) -> list[Resource]:
    """The entries ``named`` adds beyond ``existing``: a key named twice is one entry."""
    return list(
        {
            i: _entry(placeholder, r, at)
            for r, i in reversed(list(zip(named, ids, strict=True)))
            if i not in existing
        }.values()
    )


def late_line(placeholder: Resource, detail: dict[str, Any], at: datetime) -> LogEntry:
    return LogEntry(
        key=f"late|{placeholder.id}|{uuid4()}",
        run_id=placeholder.run_id,
        kind="step.answered_late",
        detail=detail,
        at=at,
    )


def _entry(placeholder: Resource, named: NamedResource, at: datetime) -> Resource:
    return Resource(
        run_id=placeholder.run_id,
        step=placeholder.step,
        kind=named.kind,
        ref=named.ref,
        module=placeholder.module,
        action=placeholder.action,
        idempotency_key=placeholder.idempotency_key,
        payload=named.payload,
        member_key=named.member_key,
        until=named.until,
        at=at,
    )

"""The resources view: one row per entry, where giving it back stands.

A row's fate columns are the domain's ``Fate``, moved by the same transitions the aggregate
applies; this module only reads a fate from a row and writes one back. In memory a row holds
the ``Fate`` itself (under ``fate``): folding an entry's events moves it without writing its
columns out and reading them back at every event.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import singledispatch
from operator import itemgetter
from typing import Any

from runledger.domain.fate import Fate
from runledger.domain.resource import PLACEHOLDER_KIND, Resource
from runledger.projections.views.base import Row, RowView, as_json, cells, epoch, require


@singledispatch
def apply_resource(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the resources view does not know {type(event).__name__}")


def _moment(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def fate_of(row: Row) -> Fate:
    return Fate(
        state=row["status"],
        attempts=row["attempts"],
        terminal=bool(row["terminal"]),
        claim_worker=row["claim_worker"],
        claim_expires_at=_moment(row["claim_expires"]),
        next_attempt_at=_moment(row["next_attempt"]),
        last_error=row["last_error"],
        drift_current=None if row["drift_current"] is None else json.loads(row["drift_current"]),
    )


def fate_cells(fate: Fate) -> Row:
    return {
        "status": fate.state,
        "attempts": fate.attempts,
        "terminal": int(fate.terminal),
        "claim_worker": fate.claim_worker,
        "claim_expires": epoch(fate.claim_expires_at),
        "next_attempt": epoch(fate.next_attempt_at),
        "last_error": fate.last_error,
        "drift_current": as_json(fate.drift_current),
    }


FATE_COLUMNS = frozenset(fate_cells(Fate("live")))


def _moved(row: Row, event: Any, fate: Fate) -> Row:
    """The row moved to ``fate`` by ``event``, in place: a row belongs to whoever folds it."""
    row["fate"] = fate
    row["updated_at"] = epoch(event.at)
    row["version"] = event.originator_version
    return row


@apply_resource.register
def _(event: Resource.Recorded, row: Row | None) -> Row:
    at = epoch(event.at)
    return {
        "entry_id": str(event.originator_id),
        "run_id": str(event.run_id),
        "step": event.step,
        "kind": event.kind,
        "ref": event.ref,
        "module": event.module,
        "action": event.action,
        "idempotency_key": event.idempotency_key,
        "payload": as_json(event.payload),
        "member_key": event.member_key,
        "until": epoch(event.until),
        "fate": Fate.recorded(placeholder=event.kind == PLACEHOLDER_KIND),
        "recorded_at": at,
        "updated_at": at,
        "version": event.originator_version,
    }


@apply_resource.register
def _(event: Resource.Superseded, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].superseded())


@apply_resource.register
def _(event: Resource.RevertClaimed, row: Row | None) -> Row:
    found = require(row, event)
    fate = found["fate"].claimed(event.attempt, event.worker, event.expires_at)
    return _moved(found, event, fate)


@apply_resource.register
def _(event: Resource.Reverted, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].reverted())


@apply_resource.register
def _(event: Resource.RevertFailed, row: Row | None) -> Row:
    found = require(row, event)
    fate = found["fate"].failed(event.mode, event.error, event.next_attempt_at)
    return _moved(found, event, fate)


@apply_resource.register
def _(event: Resource.Drifted, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].drifted(event.current, event.error))


@apply_resource.register
def _(event: Resource.Orphaned, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].orphaned(event.reason))


@apply_resource.register
def _(event: Resource.Expired, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].expired())


@apply_resource.register
def _(event: Resource.AttemptsReset, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].attempts_reset())


@apply_resource.register
def _(event: Resource.Kept, row: Row | None) -> Row:
    found = require(row, event)
    return _moved(found, event, found["fate"].kept())


class ResourcesView(RowView):
    name = "resources"
    table = "rl_resources"
    key = "entry_id"
    columns = (
        "entry_id",
        "run_id",
        "step",
        "kind",
        "ref",
        "module",
        "action",
        "idempotency_key",
        "payload",
        "member_key",
        "until",
        "status",
        "attempts",
        "terminal",
        "claim_worker",
        "claim_expires",
        "last_error",
        "drift_current",
        "recorded_at",
        "updated_at",
        "next_attempt",
        "version",
    )
    events = (
        Resource.Recorded,
        Resource.Superseded,
        Resource.RevertClaimed,
        Resource.Reverted,
        Resource.RevertFailed,
        Resource.Drifted,
        Resource.Orphaned,
        Resource.Expired,
        Resource.AttemptsReset,
        Resource.Kept,
    )
    apply = apply_resource

    def __init__(self) -> None:
        super().__init__()
        self.leading = itemgetter(*self.columns[: self.columns.index("status")])
        """The columns before the fate's, which the row holds as they are stored."""

    def revived(self, stored: Row) -> Row:
        kept = {k: v for k, v in stored.items() if k not in FATE_COLUMNS}
        return kept | {"fate": fate_of(stored)}

    def stored(self, row: Row) -> list[Any]:
        # In column order, read straight from the row and its fate: a rebuild writes a row
        # for every entry, and merging the two into a dict first was a large part of this
        # (scripts/MEASUREMENTS.md, "Resources rows' cells from the row and its fate").
        fate: Fate = row["fate"]
        return cells(
            [
                *self.leading(row),
                fate.state,
                fate.attempts,
                int(fate.terminal),
                fate.claim_worker,
                epoch(fate.claim_expires_at),
                fate.last_error,
                as_json(fate.drift_current),
                row["recorded_at"],
                row["updated_at"],
                epoch(fate.next_attempt_at),
                row["version"],
            ]
        )

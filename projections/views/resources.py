"""The resources view: one row per entry, where giving it back stands."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.resource import PLACEHOLDER_KIND, Resource
from runledger.projections.views.base import Row, RowView, as_json, epoch, require


@singledispatch
def apply_resource(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the resources view does not know {type(event).__name__}")


def _changed(row: Row | None, event: Any, **changes: Any) -> Row:
    stamp = {"updated_at": epoch(event.at), "version": event.originator_version}
    return require(row, event) | changes | stamp


_RELEASED = {"claim_worker": None, "claim_expires": None, "next_attempt": None}


@apply_resource.register
def _(event: Resource.Recorded, row: Row | None) -> Row:
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
        "status": "placeholder" if event.kind == PLACEHOLDER_KIND else "live",
        "attempts": 0,
        "terminal": 0,
        "claim_worker": None,
        "claim_expires": None,
        "last_error": None,
        "drift_current": None,
        "recorded_at": epoch(event.at),
        "updated_at": epoch(event.at),
        "next_attempt": None,
        "version": event.originator_version,
    }


@apply_resource.register
def _(event: Resource.Superseded, row: Row | None) -> Row:
    return _changed(row, event, status="superseded")


@apply_resource.register
def _(event: Resource.RevertClaimed, row: Row | None) -> Row:
    return _changed(
        row,
        event,
        attempts=event.attempt,
        claim_worker=event.worker,
        claim_expires=epoch(event.expires_at),
        next_attempt=None,
    )


@apply_resource.register
def _(event: Resource.Reverted, row: Row | None) -> Row:
    return _changed(row, event, status="reverted", **_RELEASED)


@apply_resource.register
def _(event: Resource.RevertFailed, row: Row | None) -> Row:
    return _changed(
        row,
        event,
        status="failing",
        terminal=int(event.mode == "terminal"),
        last_error=event.error,
        **_RELEASED | {"next_attempt": epoch(event.next_attempt_at)},
    )


@apply_resource.register
def _(event: Resource.Drifted, row: Row | None) -> Row:
    return _changed(
        row,
        event,
        status="drifted",
        last_error=event.error,
        drift_current=as_json(event.current),
        **_RELEASED,
    )


@apply_resource.register
def _(event: Resource.Orphaned, row: Row | None) -> Row:
    return _changed(row, event, status="orphaned", last_error=event.reason)


@apply_resource.register
def _(event: Resource.Expired, row: Row | None) -> Row:
    return _changed(row, event, status="expired", **_RELEASED)


@apply_resource.register
def _(event: Resource.AttemptsReset, row: Row | None) -> Row:
    status = require(row, event)["status"]
    status = "failing" if status == "drifted" else status
    return _changed(row, event, status=status, attempts=0, terminal=0, **_RELEASED)


@apply_resource.register
def _(event: Resource.Kept, row: Row | None) -> Row:
    return _changed(row, event, status="kept", **_RELEASED)


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

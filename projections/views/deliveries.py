"""The deliveries view: one row per webhook delivery, from its Delivery events, so that a sender
finds what is due and an admin lists a subscription's deliveries without replaying them."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.delivery import Delivery
from runledger.projections.views.base import Row, RowView, epoch, require


@singledispatch
def apply_delivery(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the deliveries view does not know {type(event).__name__}")


@apply_delivery.register
def _(event: Delivery.Queued, row: Row | None) -> Row:
    return {
        "delivery_id": str(event.originator_id),
        "subscription_id": str(event.subscription_id),
        "fact": event.fact,
        "state": "pending",
        "attempts": 0,
        "queued_at": epoch(event.at),
        "next_at": epoch(event.at),
        "claim_until": None,
        "last_status": None,
        "last_error": None,
        "version": event.originator_version,
    }


@apply_delivery.register
def _(event: Delivery.Claimed, row: Row | None) -> Row:
    return require(row, event) | {
        "claim_until": epoch(event.until),
        "version": event.originator_version,
    }


@apply_delivery.register
def _(event: Delivery.Attempted, row: Row | None) -> Row:
    found = require(row, event)
    ok = event.status is not None and 200 <= event.status < 300
    state = "delivered" if ok else ("failed" if event.next_at is None else "pending")
    return found | {
        "state": state,
        "attempts": found["attempts"] + 1,
        "next_at": None if ok else epoch(event.next_at),
        "claim_until": None,
        "last_status": event.status,
        "last_error": event.error,
        "version": event.originator_version,
    }


class DeliveriesView(RowView):
    name = "deliveries"
    table = "rl_deliveries"
    key = "delivery_id"
    columns = (
        "delivery_id",
        "subscription_id",
        "fact",
        "state",
        "attempts",
        "queued_at",
        "next_at",
        "claim_until",
        "last_status",
        "last_error",
        "version",
    )
    events = (Delivery.Queued, Delivery.Claimed, Delivery.Attempted)
    apply = apply_delivery

"""Webhook subscriptions, an admin's to manage, and the deliveries made to each."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Response

from runledger.application.api.deps import Admin
from runledger.application.api.once import Once
from runledger.application.api.paging import MAX_REACH, Cursor, Limit, window
from runledger.application.api.responses import ABOUT_ONE, ACTING, AUTHENTICATED
from runledger.application.deps import WebhooksDep
from runledger.application.reading.schemas import webhooks as schemas

router = APIRouter(
    prefix="/admin/webhooks", tags=["webhooks"], responses=AUTHENTICATED | ABOUT_ONE | ACTING
)


@router.get("", response_model=schemas.WebhookPage)
def list_webhooks(
    hooks: WebhooksDep, _: Admin, limit: Limit = 200, cursor: Cursor = None
) -> schemas.WebhookPage:
    """Every subscription, oldest first; never a secret."""
    return window(limit, cursor).page(hooks.listing(), schemas.Webhook.of, schemas.WebhookPage)


@router.post("", response_model=schemas.AddedWebhook, status_code=201)
def add_webhook(
    hooks: WebhooksDep, actor: Admin, once: Once, body: schemas.NewWebhook
) -> schemas.AddedWebhook | Response:
    """A subscription, enabled; its secret is in this answer only, `Location` the
    subscription's. Under an Idempotency-Key a repeat adds nothing and is refused (409)."""
    return once(
        lambda: hooks.add(body.url, body.events, by=actor.name).subscription,
        schemas.AddedWebhook.added,
        schemas.AddedWebhook.withheld,
        located=lambda added: f"/admin/webhooks/{added.subscription_id}",
    )


@router.get("/{subscription_id}", response_model=schemas.Webhook)
def get_webhook(hooks: WebhooksDep, _: Admin, subscription_id: UUID) -> schemas.Webhook:
    return schemas.Webhook.of(hooks.one(subscription_id))


@router.patch("/{subscription_id}", response_model=schemas.Webhook)
def change_webhook(
    hooks: WebhooksDep, actor: Admin, subscription_id: UUID, body: schemas.WebhookChange
) -> schemas.Webhook:
    """Enable or disable it: a disabled subscription is queued nothing and sent nothing."""
    return schemas.Webhook.of(hooks.switch(subscription_id, body.enabled, by=actor.name))


@router.delete("/{subscription_id}", response_model=schemas.Webhook)
def remove_webhook(hooks: WebhooksDep, actor: Admin, subscription_id: UUID) -> schemas.Webhook:
    """Remove it; what was queued for it is not sent (each is recorded as failed)."""
    return schemas.Webhook.of(hooks.remove(subscription_id, by=actor.name))


@router.get("/{subscription_id}/deliveries", response_model=schemas.DeliveryPage)
def list_deliveries(
    hooks: WebhooksDep, _: Admin, subscription_id: UUID, limit: Limit = 50, cursor: Cursor = None
) -> schemas.DeliveryPage:
    """Its deliveries, newest first, each with every attempt (status or error, and when)."""
    at = window(limit, cursor)
    found = hooks.deliveries(subscription_id, min(at.reach, MAX_REACH + 1))
    return at.page(found, schemas.WebhookDelivery.of, schemas.DeliveryPage)

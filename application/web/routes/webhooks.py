"""The webhooks page: each subscription (never its secret) and its latest deliveries with every
attempt, for admins, as the API's deliveries answer them."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from runledger.application.deps import WebhooksDep
from runledger.application.reading.schemas.webhooks import Webhook, WebhookDelivery
from runledger.application.web.render import page
from runledger.application.web.session import Reader, Refused
from runledger.domain.token import a_role, may

router = APIRouter(include_in_schema=False)

LATEST = 10
"""Deliveries shown per subscription; the API and `runledger webhook deliveries` page further."""


@router.get("/webhooks", response_class=HTMLResponse)
def webhooks_page(request: Request, hooks: WebhooksDep, actor: Reader) -> HTMLResponse:
    if not may(actor.role, "admin"):
        raise Refused(403, f"{actor.name} signed in as {a_role(actor.role)}: webhooks are admins'")
    shown = [
        (
            Webhook.of(one),
            [WebhookDelivery.of(d) for d in hooks.deliveries(one.subscription_id, LATEST)],
        )
        for one in hooks.listing()
    ]
    return page(request, "webhooks.html", actor, webhooks=shown)

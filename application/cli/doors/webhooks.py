"""The webhook commands' reads and acts through either door: the store directly (an
administrator's, who is the person at this terminal) or a server as the token's admin."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from runledger.application.cli.doors.http import Http
from runledger.application.cli.keyed import answered, keyed_call, terminal_person
from runledger.application.reading.schemas.webhooks import (
    AddedWebhook,
    DeliveryPage,
    Webhook,
    WebhookDelivery,
)
from runledger.application.runledger import Runledger

HOOKS = "/admin/webhooks"


class WebhooksDoor(Protocol):
    def add_webhook(self, url: str, events: list[str], key: str | None) -> AddedWebhook: ...
    def webhooks(self) -> list[Webhook]: ...
    def remove_webhook(self, subscription_id: UUID) -> Webhook: ...
    def deliveries(self, subscription_id: UUID, limit: int) -> list[WebhookDelivery]: ...


class LocalWebhooks:
    rl: Runledger

    def add_webhook(self, url: str, events: list[str], key: str | None) -> AddedWebhook:
        by, hooks = terminal_person(), self.rl.webhooks
        call = keyed_call(self.rl.once, key, by, HOOKS, {"url": url, "events": events})
        return answered(
            call,
            lambda: AddedWebhook.added(hooks.add(url, events, by=by).subscription),
            AddedWebhook,
            201,
            AddedWebhook.withheld,
        )

    def webhooks(self) -> list[Webhook]:
        return [Webhook.of(one) for one in self.rl.webhooks.listing()]

    def remove_webhook(self, subscription_id: UUID) -> Webhook:
        return Webhook.of(self.rl.webhooks.remove(subscription_id, by=terminal_person()))

    def deliveries(self, subscription_id: UUID, limit: int) -> list[WebhookDelivery]:
        found = self.rl.webhooks.deliveries(subscription_id, limit)
        return [WebhookDelivery.of(one) for one in found]


class RemoteWebhooks:
    http: Http

    def add_webhook(self, url: str, events: list[str], key: str | None) -> AddedWebhook:
        body = {"url": url, "events": events}
        return self.http.read(AddedWebhook, "POST", HOOKS, json=body, key=key)

    def webhooks(self) -> list[Webhook]:
        return self.http.items(Webhook, HOOKS)

    def remove_webhook(self, subscription_id: UUID) -> Webhook:
        return self.http.read(Webhook, "DELETE", f"{HOOKS}/{subscription_id}")

    def deliveries(self, subscription_id: UUID, limit: int) -> list[WebhookDelivery]:
        path = f"{HOOKS}/{subscription_id}/deliveries"
        return self.http.read(DeliveryPage, "GET", path, params={"limit": limit}).items

"""What the API answers and accepts about webhook subscriptions and their deliveries."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field

from runledger.application.reading.schemas.common import Answer, Ask, Page, StoredText
from runledger.domain.delivery import Delivery
from runledger.domain.subscription import MAX_URL, Fact, Subscription

URL = r"^https?://[^/?#@\x00-\x20\x7f-\x9f]+([/?#][^\x00-\x20\x7f-\x9f]*)?$"
"""http or https, a host with no user or password, no space or control character anywhere."""


class NewWebhook(Ask):
    url: StoredText = Field(
        max_length=MAX_URL,
        pattern=URL,
        description="where to POST: http or https, no user or password in it",
    )
    events: list[Fact] = Field(min_length=1, max_length=4, description="what to be told of")


class WebhookChange(Ask):
    enabled: bool


class Webhook(Answer):
    subscription_id: UUID
    url: str
    events: list[str]
    enabled: bool
    added_by: str
    added_at: datetime

    @classmethod
    def of(cls, one: Subscription) -> Webhook:
        return cls(
            subscription_id=one.subscription_id,
            url=one.url,
            events=list(one.facts),
            enabled=one.enabled,
            added_by=one.added_by,
            added_at=one.added_at,
        )


class WebhookPage(Page[Webhook]):
    pass


class AddedWebhook(Webhook):
    secret: str = Field(description="signs every delivery; shown in this answer only")

    @classmethod
    def added(cls, one: Subscription) -> AddedWebhook:
        return cls(**Webhook.of(one).model_dump(), secret=one.secret)

    def withheld(self) -> str:
        """Why a repeat of the request that added this subscription is refused."""
        return (
            f"the secret of webhook {self.subscription_id} is shown once: remove it and add "
            "another if it was lost"
        )


class Attempt(Answer):
    at: datetime
    status: int | None = Field(description="the receiver's HTTP status; null if none came")
    error: str | None = Field(description="why no status came (refused, timed out, ...)")


class WebhookDelivery(Answer):
    delivery_id: UUID
    subscription_id: UUID
    event: str
    state: Literal["pending", "delivered", "failed"]
    queued_at: datetime
    next_at: datetime | None = Field(description="when it is tried next; null once settled")
    attempts: list[Attempt]
    body: dict[str, Any] = Field(description="what is POSTed, as JSON")

    @classmethod
    def of(cls, one: Delivery) -> WebhookDelivery:
        return cls(
            delivery_id=one.id,
            subscription_id=one.subscription_id,
            event=one.fact,
            state=one.state,
            queued_at=one.queued_at,
            next_at=one.next_at if one.state == "pending" else None,
            attempts=[Attempt(at=a.at, status=a.status, error=a.error) for a in one.attempts],
            body=one.body,
        )


class DeliveryPage(Page[WebhookDelivery]):
    pass

"""Webhook subscriptions as admins manage them, and the deliveries made to each.

The secret is runledger's to make: given once in the answer that adds the subscription, like a
token's, and kept in the store (unlike a token's digest) because every delivery is signed with
it. Whoever can read the events table can read it."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError

from runledger.application.errors import BadRequest, NotFound
from runledger.application.services.inputs import person
from runledger.application.services.ledger import save_with_retry
from runledger.application.services.webhooks_addresses import Destinations
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.delivery import Delivery
from runledger.domain.subscription import (
    FACTS,
    SUBSCRIPTIONS_ID,
    Subscription,
    Subscriptions,
    UnknownSubscription,
    url_problem,
)
from runledger.domain.text import safe_text
from runledger.projections.deliveries import DeliveryRows

PREFIX = "whsec_"


@dataclass(frozen=True)
class Added:
    subscription: Subscription

    @property
    def secret(self) -> str:
        return self.subscription.secret


def checked_url(url: str) -> str:
    problem = url_problem(url)
    if problem is not None:
        raise BadRequest(f"url: {safe_text(url, 80)} {problem}")
    return url


def checked_facts(facts: Sequence[str]) -> tuple[str, ...]:
    wrong = [f for f in facts if f not in FACTS]
    if not facts or wrong:
        said = safe_text(", ".join(wrong), 80) if wrong else "none"
        raise BadRequest(f"events: {said}; each must be one of {', '.join(FACTS)}")
    return tuple(dict.fromkeys(facts))


class Webhooks:
    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        rows: DeliveryRows,
        clock: Callable[[], datetime],
        destinations: Destinations | None = None,
    ) -> None:
        self.app = app
        self.streams = streams
        self.rows = rows
        self.clock = clock
        self.destinations = destinations or Destinations()

    def _all(self) -> Subscriptions:
        try:
            found: Subscriptions = self.app.repository.get(SUBSCRIPTIONS_ID)
        except AggregateNotFoundError:
            return Subscriptions.open()
        return found

    def add(self, url: str, facts: Sequence[str], by: str) -> Added:
        """A new subscription, enabled; its secret is in the answer and shown nowhere else."""
        new = Subscription(
            uuid4(),
            self._reachable(checked_url(url)),
            checked_facts(facts),
            PREFIX + secrets.token_urlsafe(32),
            True,
            person(by, "adding a webhook"),
            self.clock(),
        )

        def build() -> list[Subscriptions]:
            every = self._all()
            every.add(new)
            return [every]

        save_with_retry(self.app, build)
        return Added(new)

    def _reachable(self, url: str) -> str:
        problem = self.destinations.url_problem(url)
        if problem is not None:
            raise BadRequest(f"url: {safe_text(url, 80)} {problem}")
        return url

    def listing(self) -> list[Subscription]:
        every = self._all().items.values()
        return sorted(every, key=lambda s: (s.added_at, str(s.subscription_id)))

    def current(self, subscription_id: UUID) -> Subscription | None:
        """The subscription as it is now, or None once removed."""
        return self._all().items.get(subscription_id)

    def one(self, subscription_id: UUID) -> Subscription:
        try:
            return self._all().get(subscription_id)
        except UnknownSubscription as error:
            raise NotFound(str(error)) from None

    def switch(self, subscription_id: UUID, enabled: bool, by: str) -> Subscription:
        self._change(lambda every, who, at: every.switch(subscription_id, enabled, who, at), by)
        return self.one(subscription_id)

    def remove(self, subscription_id: UUID, by: str) -> Subscription:
        gone = self.one(subscription_id)
        self._change(lambda every, who, at: every.remove(subscription_id, who, at), by)
        return gone

    def _change(self, change: Callable[[Subscriptions, str, datetime], None], by: str) -> None:
        who = person(by, "changing a webhook")

        def build() -> list[Subscriptions]:
            every = self._all()
            try:
                change(every, who, self.clock())
            except UnknownSubscription as error:
                raise NotFound(str(error)) from None
            return [every]

        save_with_retry(self.app, build)

    def deliveries(self, subscription_id: UUID, limit: int) -> list[Delivery]:
        """A subscription's deliveries, newest first, each with every attempt."""
        self.one(subscription_id)
        ids = self.rows.of_subscription(subscription_id, limit)
        loaded = self.streams.load(Delivery, ids)
        return [loaded[i] for i in ids if i in loaded]

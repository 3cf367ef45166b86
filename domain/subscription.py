"""Webhook subscriptions: where runledger tells someone, about which facts, signed with which
secret. All of a store's subscriptions are one aggregate: a handful of rows an admin edits
rarely, read whole by every save that records a fact (services/webhooks_outbox.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, get_args
from urllib.parse import urlsplit
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import DomainError
from runledger.domain.ids import natural_id

Fact = Literal["run.needs_person", "run.aborted", "runner.gone", "projection.stuck"]
FACTS: tuple[Fact, ...] = get_args(Fact)
MAX_URL = 2_000
SUBSCRIPTIONS_ID = natural_id("webhook-subscriptions")


class UnknownSubscription(DomainError):
    """No subscription has this id (or it was removed)."""


def url_problem(url: str) -> str | None:
    """Why runledger refuses to send to ``url``, or None. Only http and https; no user or
    password in it (the secret signs, nothing else authenticates); nothing a header or a log
    line could be split by."""
    if len(url) > MAX_URL:
        return f"is longer than {MAX_URL} characters"
    if any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in url):
        return "holds a space or a control character"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "must not carry a user or a password"
    if not parts.hostname:
        return "names no host"
    return None


@dataclass(frozen=True)
class Subscription:
    subscription_id: UUID
    url: str
    facts: tuple[str, ...]
    secret: str
    enabled: bool
    added_by: str
    added_at: datetime

    def wants(self, fact: str) -> bool:
        return self.enabled and fact in self.facts


class Subscriptions(Aggregate):
    """Every webhook subscription of the store, by id."""

    class Opened(Aggregate.Created):
        pass

    class Added(Aggregate.Event):
        subscription_id: UUID
        url: str
        facts: list[str]
        secret: str
        by: str
        at: datetime

    class Switched(Aggregate.Event):
        subscription_id: UUID
        enabled: bool
        by: str
        at: datetime

    class Removed(Aggregate.Event):
        subscription_id: UUID
        by: str
        at: datetime

    @classmethod
    def open(cls) -> Subscriptions:
        return cls._create(cls.Opened, id=SUBSCRIPTIONS_ID)

    @event(Opened)
    def __init__(self) -> None:
        self.items: dict[UUID, Subscription] = {}

    def get(self, subscription_id: UUID) -> Subscription:
        found = self.items.get(subscription_id)
        if found is None:
            raise UnknownSubscription(f"no webhook subscription {subscription_id}")
        return found

    def add(self, new: Subscription) -> None:
        problem = url_problem(new.url)
        if problem is not None:
            raise DomainError(f"url {problem}")
        if not new.facts or any(f not in FACTS for f in new.facts):
            raise DomainError(f"events must be some of {', '.join(FACTS)}")
        self._added(
            subscription_id=new.subscription_id,
            url=new.url,
            facts=list(new.facts),
            secret=new.secret,
            by=new.added_by,
            at=new.added_at,
        )

    def switch(self, subscription_id: UUID, enabled: bool, by: str, at: datetime) -> None:
        if self.get(subscription_id).enabled != enabled:
            self._switched(subscription_id=subscription_id, enabled=enabled, by=by, at=at)

    def remove(self, subscription_id: UUID, by: str, at: datetime) -> None:
        self.get(subscription_id)
        self._removed(subscription_id=subscription_id, by=by, at=at)

    @event(Added)
    def _added(
        self, subscription_id: UUID, url: str, facts: list[str], secret: str, by: str, at: datetime
    ) -> None:
        self.items[subscription_id] = Subscription(
            subscription_id, url, tuple(facts), secret, True, by, at
        )

    @event(Switched)
    def _switched(self, subscription_id: UUID, enabled: bool, by: str, at: datetime) -> None:
        self.items[subscription_id] = replace(self.items[subscription_id], enabled=enabled)

    @event(Removed)
    def _removed(self, subscription_id: UUID, by: str, at: datetime) -> None:
        del self.items[subscription_id]

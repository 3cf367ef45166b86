"""One webhook delivery: one fact for one subscription, written in the same save as the fact
(the outbox), then claimed, sent and recorded attempt by attempt until it is answered 2xx or
has used its attempts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain import turns
from runledger.domain.errors import DomainError
from runledger.domain.ids import natural_id

DeliveryState = Literal["pending", "delivered", "failed"]


class NotDue(DomainError):
    """The delivery is settled, waits for its back-off, or another sender holds it."""


def delivery_id(subscription_id: UUID, fact: str, key: str) -> UUID:
    """One delivery per subscription and fact: the fact's own key (its event's originator and
    version, or what a watcher saw) makes a second record of it collide."""
    return natural_id("delivery", subscription_id, fact, key)


@dataclass(frozen=True)
class Attempt:
    at: datetime
    status: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class Delivery(Aggregate):
    class Queued(Aggregate.Created):
        subscription_id: UUID
        fact: str
        body: dict[str, Any]
        at: datetime

    class Claimed(Aggregate.Event):
        worker: str
        until: datetime
        at: datetime

    class Attempted(Aggregate.Event):
        status: int | None
        error: str | None
        at: datetime
        next_at: datetime | None

    @classmethod
    def queue(
        cls, subscription_id: UUID, fact: str, key: str, body: dict[str, Any], at: datetime
    ) -> Delivery:
        return cls._create(
            cls.Queued,
            id=delivery_id(subscription_id, fact, key),
            subscription_id=subscription_id,
            fact=fact,
            body=body,
            at=at,
        )

    @event(Queued)
    def __init__(
        self, subscription_id: UUID, fact: str, body: dict[str, Any], at: datetime
    ) -> None:
        self.subscription_id = subscription_id
        self.fact = fact
        self.body = body
        self.queued_at = at
        self.state: DeliveryState = "pending"
        self.attempts: list[Attempt] = []
        self.next_at: datetime | None = at
        self.claim_until: datetime | None = None

    def claim(self, worker: str, until: datetime, now: datetime) -> None:
        """Take it for one attempt; a sender that dies holding it leaves it at ``until``."""
        if self.state != "pending" or not turns.due(self.next_at, now):
            raise NotDue(f"delivery {self.id} is {self.state}, next at {self.next_at}")
        if turns.claim_live(self.claim_until, now):
            raise NotDue(f"delivery {self.id} is being sent until {self.claim_until}")
        self._claimed(worker=worker, until=until, at=now)

    def attempted(
        self, status: int | None, error: str | None, at: datetime, next_at: datetime | None
    ) -> None:
        """Record one attempt; ``next_at`` None after a failure means it has no attempts left."""
        if self.state != "pending":
            raise NotDue(f"delivery {self.id} is already {self.state}")
        self._attempted(status=status, error=error, at=at, next_at=next_at)

    @event(Claimed)
    def _claimed(self, worker: str, until: datetime, at: datetime) -> None:
        self.claim_until = until

    @event(Attempted)
    def _attempted(
        self, status: int | None, error: str | None, at: datetime, next_at: datetime | None
    ) -> None:
        attempt = Attempt(at, status, error)
        self.attempts.append(attempt)
        self.claim_until = None
        self.next_at = None if attempt.ok else next_at
        if attempt.ok:
            self.state = "delivered"
        elif next_at is None:
            self.state = "failed"

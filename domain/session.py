"""A console session: opened by a sign-in with a token, closed by a sign-out. The cookie carries
only its id (random, uuid4), so a copied cookie is worth nothing once the session is closed."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import DomainError


class SessionClosed(DomainError):
    """The session has already been closed."""


class Session(Aggregate):
    """Who signed in with which token, when, and when and why the session ended."""

    class Opened(Aggregate.Created):
        token_id: UUID
        at: datetime

    class Closed(Aggregate.Event):
        at: datetime
        why: str

    @event(Opened)
    def __init__(self, token_id: UUID, at: datetime) -> None:
        self.token_id = token_id
        self.opened_at = at
        self.closed_at: datetime | None = None
        self.closed_why = ""

    def close(self, at: datetime, why: str) -> None:
        if self.closed_at is not None:
            raise SessionClosed(f"session {self.id} was closed at {self.closed_at}")
        self._closed(at=at, why=why)

    @event(Closed)
    def _closed(self, at: datetime, why: str) -> None:
        self.closed_at = at
        self.closed_why = why

    def ends_at(self, hours: float) -> float:
        """When the session lapses, as a POSIX timestamp: ``hours`` after it was opened."""
        return self.opened_at.timestamp() + hours * 3600

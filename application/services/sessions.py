"""Console sessions kept in the store: opened at sign-in, closed at sign-out, read on every
page. A session lapses after the console's hours by the clock; no write is needed for that."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.session import Session

SIGNED_OUT = "signed out"
REPLACED = "signed in again"


class Sessions:
    def __init__(self, *, app: LedgerApp, clock: Callable[[], datetime]) -> None:
        self.app = app
        self.clock = clock

    def open(self, token_id: UUID, replacing: UUID | None = None) -> UUID:
        """A new session for this token. The one it replaces in the same browser, still open,
        is closed in the same save: a sign-in leaves no older session of that cookie alive."""
        at = self.clock()
        session = Session(token_id=token_id, at=at)
        older = self.get(replacing) if replacing is not None else None
        if older is not None and older.closed_at is None:
            older.close(at, REPLACED)
            self.app.save(session, older)
        else:
            self.app.save(session)
        return session.id

    def close(self, session_id: UUID, why: str = SIGNED_OUT) -> None:
        """Close the session; signing out of one already closed does nothing."""
        session = self.get(session_id)
        if session is None or session.closed_at is not None:
            return
        session.close(self.clock(), why)
        self.app.save(session)

    def get(self, session_id: UUID) -> Session | None:
        try:
            session: Session = self.app.repository.get(session_id)
        except AggregateNotFoundError:
            return None
        return session if isinstance(session, Session) else None

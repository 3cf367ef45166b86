"""A console session: opened with a token at a time, closed once with a reason; no store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from runledger.domain.session import Session, SessionClosed

AT = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def test_a_session_opens_with_its_token_and_lapses_its_hours_later() -> None:
    token_id = uuid4()
    session = Session(token_id=token_id, at=AT)
    assert (session.token_id, session.opened_at, session.closed_at) == (token_id, AT, None)
    assert session.ends_at(8) == (AT + timedelta(hours=8)).timestamp()
    assert session.id.version == 4  # random: the cookie's id cannot be guessed from anything


def test_a_session_closes_once_saying_why() -> None:
    session = Session(token_id=uuid4(), at=AT)
    session.close(AT + timedelta(minutes=5), "signed out")
    events = session.collect_events()
    assert [type(e) for e in events] == [Session.Opened, Session.Closed]
    assert (session.closed_at, session.closed_why) == (AT + timedelta(minutes=5), "signed out")
    with pytest.raises(SessionClosed, match="was closed at"):
        session.close(AT + timedelta(minutes=6), "signed out")
    assert session.collect_events() == []  # the refusal wrote nothing

"""The store's encoder transcodes an event's own typed fields itself (application/store/
transcoding.py): the bytes written must be the library's, whatever the field holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import JSONTranscoder, Transcoder
from freezegun.api import FakeDatetime

from runledger.application.store.ledger_app import LedgerApp
from runledger.application.store.transcoding import FastJSONTranscoder

AT = datetime(2026, 12, 3, 14, 9, 36, 47884, tzinfo=UTC)
ID = UUID(int=12345)


def registered(transcoder: Transcoder) -> Any:
    LedgerApp.register_transcodings(None, transcoder)  # type: ignore[arg-type]
    return transcoder


STATES: list[Any] = [
    {"timestamp": AT, "attempt": 1, "worker": "w", "expires_at": AT + timedelta(seconds=15)},
    {
        "run_id": ID,
        "payload": {"a": [1, {"when": AT, "id": ID}], "price": Decimal("1.50")},
        "until": None,
        "n": 1.5,
        "b": True,
        "l": [AT, ID],
        "text": 'a "quoted" \\u0000 and é',
    },
    [AT, ID],
    {"nested": {"at": AT}},
    "plain",
]


@pytest.mark.parametrize("state", STATES)
def test_the_encoder_writes_what_the_library_writes(state: Any) -> None:
    library = registered(JSONTranscoder())
    library.encoder = library.encoder.__class__(
        default=library._encode_obj, separators=(",", ":"), ensure_ascii=False
    )
    assert registered(FastJSONTranscoder()).encode(state) == library.encode(state)


def test_a_frozen_clocks_time_is_written_as_a_time() -> None:
    ours = registered(FastJSONTranscoder())
    frozen = FakeDatetime(2026, 1, 2, tzinfo=UTC)
    for _ in range(2):  # before and after its class is known to the encoder
        assert ours.encode({"at": frozen}) == (
            b'{"at":{"_type_":"datetime_iso","_data_":"2026-01-02T00:00:00+00:00"}}'
        )
        assert ours.decode(ours.encode({"at": frozen})) == {"at": datetime(2026, 1, 2, tzinfo=UTC)}

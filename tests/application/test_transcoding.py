"""The store's encoder transcodes an event's own typed fields itself (application/store/
transcoding.py): the bytes written must be the library's, whatever the field holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import JSONTranscoder, Transcoder
from freezegun.api import FakeDatetime
from hypothesis import given, settings
from hypothesis import strategies as st

from runledger.application.store.ledger_app import LedgerApp
from runledger.application.store.transcoding import FastJSONTranscoder
from runledger.domain.values import UnsafeValue

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
    assert registered(FastJSONTranscoder()).encode(state) == _library().encode(state)


def test_a_frozen_clocks_time_is_written_as_a_time() -> None:
    ours = registered(FastJSONTranscoder())
    frozen = FakeDatetime(2026, 1, 2, tzinfo=UTC)
    for _ in range(2):  # before and after its class is known to the encoder
        assert ours.encode({"at": frozen}) == (
            b'{"at":{"_type_":"datetime_iso","_data_":"2026-01-02T00:00:00+00:00"}}'
        )
        assert ours.decode(ours.encode({"at": frozen})) == {"at": datetime(2026, 1, 2, tzinfo=UTC)}


_FLAT_VALUES = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.booleans(),
    st.none(),
    st.datetimes(timezones=st.just(UTC)),
    st.uuids(),
)


@settings(max_examples=300, deadline=None)
@given(state=st.dictionaries(st.text(max_size=12), _FLAT_VALUES, max_size=8))
def test_a_flat_state_is_written_by_orjson_as_the_library_writes_it(state: dict[str, Any]) -> None:
    """Text, whole numbers, flags, nulls, UTC moments and ids take the quick path, and it writes
    the library's very bytes, or refuses a NUL as the general path does."""
    ours = registered(FastJSONTranscoder())
    assert ours._flat(state) is not None
    if any("\x00" in text for text in [*state, *state.values()] if type(text) is str):
        with pytest.raises(UnsafeValue, match="NUL"):
            ours.encode(state)
        return
    assert ours.encode(state) == _library().encode(state)


@pytest.mark.parametrize(
    "state",
    [
        {"v": 2**70},
        {"v": -(2**63) - 1},
        {"at": datetime(2026, 1, 2, tzinfo=timezone(timedelta(hours=5, minutes=30)))},
        {"at": datetime(2026, 1, 2)},
        {"v": 1e16},
        {"v": [AT]},
    ],
)
def test_what_the_quick_path_leaves_is_written_by_the_general_one(state: dict[str, Any]) -> None:
    assert registered(FastJSONTranscoder()).encode(state) == _library().encode(state)


def _library() -> Any:
    library = registered(JSONTranscoder())
    library.encoder = library.encoder.__class__(
        default=library._encode_obj, separators=(",", ":"), ensure_ascii=False
    )
    return library

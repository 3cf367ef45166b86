"""A module's answer is copied into plain data through the built-in types' own methods."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from freezegun import freeze_time

from runledger.application.modules.deadline import Malformed, Raised, Returned, call_with_deadline
from runledger.application.modules.plain import Unreadable, describe_error, plain
from tests.support.hostile import Treacherous, Unprintable, Unshowable


class Sneaky(str):
    def __str__(self) -> str:
        raise RuntimeError("no")


class Masked:
    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        raise RuntimeError("do not look")


def test_subclasses_become_their_plain_base_types() -> None:
    copied = plain(Treacherous(a=[Sneaky("s"), (1, 2.5, True)], b=None))
    assert copied == {"a": ["s", [1, 2.5, True]], "b": None}
    assert type(copied) is dict and type(copied["a"][0]) is str


NOT_PLAIN = {
    "bytes": b"x",
    "a number as key": {1: "a"},
    "a generator": (i for i in range(2)),
    "an unshowable object": Unshowable(),
    "a masked class": Masked(),
    "a set": {1.5, 2},
}


@pytest.mark.parametrize("what", NOT_PLAIN)
def test_what_is_not_plain_data_is_unreadable_with_a_reason(what: str) -> None:
    with pytest.raises(Unreadable):
        plain(NOT_PLAIN[what])


def test_a_cycle_is_unreadable_rather_than_endless() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(Unreadable, match="nested more than"):
        plain(loop)


def test_a_frozen_clock_s_datetime_is_copied_as_a_datetime() -> None:
    with freeze_time("2026-12-02T12:00:00Z"):
        now = datetime.now(UTC)
        copied = plain({"until": now})
    assert copied["until"] == datetime(2026, 12, 2, 12, tzinfo=UTC)
    assert copied["until"] is not now


def test_an_exception_whose_message_raises_is_still_described() -> None:
    assert describe_error(Unprintable()) == "Unprintable (its message could not be read)"
    assert describe_error(ValueError("a\x00b")) == "ValueError: a\\x00b"


def test_a_call_answers_plain_data_a_reason_or_the_error_described() -> None:
    answered = call_with_deadline(lambda: Treacherous(ok=True), {}, 2)
    assert answered == Returned({"ok": True})
    assert isinstance(call_with_deadline(lambda: b"x", {}, 2), Malformed)

    async def raising() -> None:
        raise Unprintable()

    raised = call_with_deadline(raising, {}, 2)
    assert isinstance(raised, Raised)
    assert raised.message == "Unprintable (its message could not be read)"

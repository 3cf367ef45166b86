"""A deeply nested value is refused without ever recursing deeply: a garbage collection during a
deep recursion runs finalizers with no stack left, and each fails where nobody sees it."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from typing import ClassVar

import pytest

from runledger.application.errors import BadRequest
from runledger.application.runledger import Runledger
from tests.support.hostile import nested, thing_spec


class Finalized:
    """Cyclic garbage whose finalizer needs a little stack, as real ones do (a pool, a file),
    and leaves garbage like itself behind while ``going``: some is always there to collect."""

    failures: ClassVar[list[str]] = []
    going = False

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        try:
            _descend(40)
        except RecursionError as error:
            Finalized.failures.append(repr(error))
        if Finalized.going:
            Finalized()


def _descend(levels: int) -> int:
    return 0 if levels == 0 else 1 + _descend(levels - 1)


@pytest.fixture
def finalizers_watched() -> Iterator[None]:
    """A collection at every allocation, garbage with finalizers always there to collect, and
    at the end: not one finalizer ran out of stack."""
    before = gc.get_threshold()
    gc.collect()
    Finalized.failures = []
    Finalized.going = True
    Finalized()
    gc.set_threshold(1)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        Finalized.going = False
        gc.collect()
    assert Finalized.failures == []


def test_a_value_nested_past_the_interpreter_s_limit_is_refused_without_deep_recursion(
    rl: Runledger, finalizers_watched: None
) -> None:
    spec = thing_spec(nested={"list": [1, nested(sys.getrecursionlimit() * 2)]})
    with pytest.raises(BadRequest, match="too deep"):
        rl.runs.start(spec)


def test_json_text_nested_past_the_limit_is_refused_before_it_is_parsed(
    rl: Runledger, finalizers_watched: None
) -> None:
    levels = sys.getrecursionlimit() * 2
    document = (
        '{"name": "deep", "phases": [{"id": "p", "steps": [{"id": "s", "action": "hostile.thing", '
        '"params": {"note": "brackets [[{{ in a string are text", "deep": '
        + "[" * levels
        + "]" * levels
        + "}}]}]}"
    )
    with pytest.raises(BadRequest, match="the spec nests deeper than 64 levels"):
        rl.runs.start(document)
    shallow = document.replace("[" * levels + "]" * levels, "[[1]]").replace("hostile.thing", "x")
    with pytest.raises(BadRequest) as refused:
        rl.runs.start(shallow)
    assert "nests" not in str(refused.value)

"""A rebuild's writer thread: writes in order, a failure raised on the replay's thread and
nothing written after it, and no write outliving the block."""

from __future__ import annotations

import functools
import threading
import time

import pytest

from runledger.projections.writer import Writer


def test_writes_are_made_in_the_order_they_were_handed_over() -> None:
    done: list[int] = []
    with Writer() as writer:
        for n in range(50):
            writer.put(functools.partial(done.append, n))
        writer.wait()
        assert done == list(range(50))


def test_a_failed_write_is_raised_by_the_next_call_and_nothing_after_it_is_written() -> None:
    done: list[str] = []

    def failing() -> None:
        raise ValueError("the store refused a value")

    with Writer() as writer:
        writer.put(lambda: done.append("first"))
        writer.put(failing)
        with pytest.raises(ValueError, match="refused"):
            writer.wait()
        with pytest.raises(ValueError, match="refused"):
            writer.put(lambda: done.append("after"))
    assert done == ["first"]


def test_leaving_the_block_waits_for_the_write_under_way() -> None:
    started, finished = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        time.sleep(0.2)
        finished.set()

    with pytest.raises(RuntimeError), Writer() as writer:
        writer.put(slow)
        started.wait(5)
        raise RuntimeError("the replay failed while a page was being written")
    assert finished.is_set()
    assert not any(t.name == "rebuild-writer" for t in threading.enumerate())


def test_writes_not_set_aside_are_made_at_once_and_raise_at_once() -> None:
    done: list[str] = []

    def failing() -> None:
        raise ValueError("the store refused a value")

    with Writer(aside=False) as writer:
        writer.put(lambda: done.append("first"))
        assert done == ["first"]
        with pytest.raises(ValueError, match="refused"):
            writer.put(failing)
    assert not any(t.name == "rebuild-writer" for t in threading.enumerate())

"""Module calls run on reused daemon threads (application/modules/workers.py) and still keep
their deadline: a call that overruns is left behind, and the next one does not wait for it."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from runledger.application.modules.deadline import Returned, TimedOut, call_with_deadline
from runledger.application.modules.workers import Workers


def thread_name(**_: Any) -> str:
    return threading.current_thread().name


def test_calls_one_after_another_run_on_one_reused_thread_not_the_callers() -> None:
    names = set()
    for _ in range(20):
        outcome = call_with_deadline(thread_name, {}, 5)
        assert isinstance(outcome, Returned)
        names.add(outcome.value)
    assert threading.current_thread().name not in names
    assert len(names) <= 2  # a thread may be handed the next call just before it waits again


def test_a_call_that_overruns_is_left_behind_and_the_next_one_runs_at_once() -> None:
    release = threading.Event()

    def hangs(**_: Any) -> str:
        release.wait(30)
        return threading.current_thread().name

    assert isinstance(call_with_deadline(hangs, {}, 0.05), TimedOut)
    started = time.monotonic()
    outcome = call_with_deadline(thread_name, {}, 5)
    assert isinstance(outcome, Returned)
    assert time.monotonic() - started < 1
    release.set()


def test_an_async_function_on_a_reused_thread_is_awaited() -> None:
    async def answer(**kwargs: Any) -> Any:
        return {"ok": True, "got": kwargs}

    for _ in range(3):
        assert call_with_deadline(answer, {"x": 1}, 5) == Returned({"ok": True, "got": {"x": 1}})


def test_no_more_threads_wait_than_the_pool_keeps() -> None:
    pool = Workers(max_idle=2)
    gate = threading.Barrier(6)
    done = threading.Semaphore(0)

    def job() -> None:
        gate.wait(5)  # six jobs in flight at once: six threads
        done.release()

    for _ in range(5):
        pool.run(job)
    gate.wait(5)
    for _ in range(5):
        assert done.acquire(timeout=5)
    deadline = time.monotonic() + 5
    while pool.waiting() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert pool.waiting() == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_calls_its_modules_on_threads_of_its_own() -> None:
    assert isinstance(call_with_deadline(thread_name, {}, 5), Returned)  # a thread waits now
    child = os.fork()
    if child == 0:
        outcome = call_with_deadline(thread_name, {}, 5)
        os._exit(0 if isinstance(outcome, Returned) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0

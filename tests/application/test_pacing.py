"""The runner's pacing: a cleanup leg bounded by time, not by a count of runs, and a rest that a
run ending elsewhere cuts short."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from uuid import UUID

import pytest
from eventsourcing.persistence import ConnectionPoolClosedError

from runledger.application.services.running.division import owner
from runledger.application.services.running.runner import TickReport
from tests.conftest import Factory
from tests.support.playing import SPAWN, Clock, complete, ended_run, key, makes, play, start
from tests.support.reading import status as cleanup_status
from tests.support.reading import the_step
from tests.support.world import World, hangs


def _until(condition: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``condition`` held; fails after ``timeout``."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "not within the time allowed"
        time.sleep(0.01)
    return time.monotonic() - started


def test_one_tick_gives_back_every_ended_run_pass_after_pass(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(cleanup_run_batch=2)
    runs = [ended_run(rl, [f"c{n}"])[0] for n in range(5)]
    report = rl.runner("w1").tick()
    assert set(report.swept) == set(runs) and not report.cut_short
    assert world.reverts == {key(r): 1 for r in runs}
    assert {cleanup_status(rl, r) for r in runs} == {"complete"}


def test_a_leg_whose_time_is_spent_stops_between_calls_and_says_so(
    make_runledger: Factory, world: World
) -> None:
    rl = make_runledger(cleanup_run_batch=1, cleanup_budget_s=0.3)
    runs = [ended_run(rl, [f"c{n}"])[0] for n in range(6)]
    world.answer("revert", SPAWN, hangs(0.2, {"ok": True}))
    first = rl.runner("w1").tick()
    # Two or three calls of 0.2 s fit 0.3 s (the pass in hand finishes its call); not six.
    assert first.cut_short and 1 <= len(first.swept) <= 3, [
        (s.attempted, s.reverted, s.failed, s.remaining) for s in first.swept.values()
    ]
    assert sum(world.reverts.values()) == len(first.swept)
    reports = [first]
    while reports[-1].cut_short:
        reports.append(rl.runner("w1").tick())
    assert world.reverts == {key(r): 1 for r in runs}
    assert {cleanup_status(rl, r) for r in runs} == {"complete"}
    assert not reports[-1].cut_short


def test_a_run_ended_elsewhere_is_given_back_before_the_rest_is_over(
    make_runledger: Factory, world: World
) -> None:
    rl = make_runledger()
    run = play(rl, makes("spawn", "c1", "c2"))
    ticked = threading.Event()
    legs: list[TickReport] = []

    def observe(report: TickReport, _advance: float, _cleanup: float) -> None:
        legs.append(report)
        ticked.set()

    runner = rl.runner("w1")
    runner.observe = observe
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(60.0, stop))
    thread.start()
    try:
        assert ticked.wait(10)
        complete(make_runledger(), run)  # another process's API or CLI ends the run
        waited = _until(lambda: cleanup_status(rl, run) == "complete", timeout=10)
    finally:
        stop.set()
        thread.join(10)
    assert waited < 5  # the rest was 60 s
    assert world.reverts == {key(run): 1}
    assert len(legs) == 2 and set(legs[1].swept) == {run}  # the first tick, then the woken leg


def test_a_run_ended_elsewhere_wakes_only_the_runner_whose_share_it_is(
    make_runledger: Factory, world: World
) -> None:
    stores = [make_runledger(wake_s=0.01) for _ in range(2)]
    run = play(stores[0], makes("spawn", "c1", "c2"))
    runners = [rl.runner(f"w{n}") for n, rl in enumerate(stores)]
    legs: list[list[TickReport]] = [[], []]
    for runner, seen in zip(runners, legs, strict=True):
        runner.join()  # both before either ticks: each tick reads a division of two
        runner.observe = lambda report, *_, seen=seen: seen.append(report)
    ids = {runner.runner_id for runner in runners}
    assert None not in ids
    mine = [owner(run, ids) == runner.runner_id for runner in runners]  # type: ignore[arg-type]
    stop = threading.Event()
    threads = [threading.Thread(target=r.run, args=(60.0, stop)) for r in runners]
    for thread in threads:
        thread.start()
    try:
        _until(lambda: all(legs), timeout=10)  # each has ticked once, and rests for 60 s
        complete(make_runledger(), run)  # another process's API or CLI ends the run
        ended_at = stores[0].app.recorder.max_notification_id() or 0
        wakes = [runner.wake for runner in runners]

        def both_looked() -> bool:  # each has read the store past the run's end since
            return all(w is not None and (w.seen or 0) >= ended_at for w in wakes)

        _until(lambda: cleanup_status(stores[0], run) == "complete", timeout=10)
        _until(both_looked, timeout=10)
        time.sleep(0.1)  # a leg woken by the last look has begun, and the observer hears it
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert world.reverts == {key(run): 1}
    owner_legs, other_legs = (legs[0], legs[1]) if mine[0] else (legs[1], legs[0])
    assert [set(leg.swept) for leg in owner_legs] == [set(), {run}]  # its tick, the woken leg
    assert [set(leg.swept) for leg in other_legs] == [set()]  # its tick alone


def test_a_resting_runner_with_nothing_ended_only_reads(
    make_runledger: Factory, world: World
) -> None:
    rl = make_runledger(wake_s=0.01)
    run: UUID = ended_run(rl, ["c1"])[0]
    legs: list[TickReport] = []
    runner = rl.runner("w1")
    runner.observe = lambda report, *_: legs.append(report)
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(60.0, stop))
    thread.start()
    try:
        _until(lambda: cleanup_status(rl, run) == "complete", timeout=10)
        head = rl.app.recorder.max_notification_id()
        time.sleep(0.5)  # some fifty looks
        assert rl.app.recorder.max_notification_id() == head
    finally:
        stop.set()
        thread.join(10)
    assert len(legs) == 1  # the runner's own ends wake nothing


def test_a_tick_whose_step_bound_left_steps_due_is_followed_at_once(
    make_runledger: Factory, world: World
) -> None:
    rl = make_runledger(steps_per_tick=2)
    run = start(rl, *(makes(f"s{n}", f"c{n}") for n in range(5)))
    assert rl.runner("w0").tick().advance.cut_short  # two of five dispatched
    runner = rl.runner("w1")
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(60.0, stop))
    thread.start()
    try:
        done = lambda: all(the_step(rl, run, f"s{n}").state == "done" for n in range(5))  # noqa: E731
        waited = _until(done, timeout=10)
    finally:
        stop.set()
        thread.join(10)
    assert waited < 5  # two more ticks at once, not two rests of 60 s


def test_a_resting_runner_whose_store_is_gone_says_so_once_a_tick_not_once_a_look(
    make_runledger: Factory, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    rl = make_runledger(wake_s=0.01)
    runner = rl.runner("w1")
    stop = threading.Event()

    def run() -> None:
        with contextlib.suppress(ConnectionPoolClosedError):  # leaving, at the end, fails too
            runner.run(0.5, stop)

    def said() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "runledger.runner"]

    with caplog.at_level(logging.WARNING, logger="runledger.runner"):
        thread = threading.Thread(target=run)
        thread.start()
        try:
            time.sleep(0.2)
            rl.app.close()  # the pool is closed under the runner: every read now fails
            # Its first tick since says so (however late a busy machine lets it come), then
            # it rests: two or three ticks more, some hundred looks.
            deadline = time.monotonic() + 20
            while not said() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.2)
        finally:
            stop.set()
            thread.join(10)
    assert 1 <= len(said()) <= 4, [r.getMessage() for r in said()]

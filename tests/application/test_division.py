"""Runners that share a store divide the runs between them (services/running/division.py): each
run belongs to one live runner of its kit, stays with it while the runners do, and a runner that
stops beating has its runs taken by the others within the short bound."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from uuid import UUID, uuid4

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.running.division import AGAIN_S, BEATS, FLOOR_S, Share
from runledger.application.services.running.runner import Runner
from runledger.application.settings import Settings
from runledger.domain.step import Step
from tests.support.playing import GAME_SPAWN, NO_BACKOFF, Clock, made, makes, phase, spec
from tests.support.world import World

RUNS = [uuid4() for _ in range(300)]


def shares(runners: list[UUID]) -> dict[UUID, set[UUID]]:
    """Each runner's runs, as each would read a fleet where ``runners`` are live."""
    group = frozenset(runners)
    return {r: set(Share({r: group}).of(RUNS)) for r in runners}


def test_each_run_belongs_to_exactly_one_live_runner_and_stays_with_it() -> None:
    runners = [uuid4() for _ in range(4)]
    divided = shares(runners)
    assert sorted(run for part in divided.values() for run in part) == sorted(RUNS)
    assert all(len(part) > 30 for part in divided.values())  # each takes a share
    assert shares(runners) == divided


def test_a_gone_runners_runs_are_taken_and_nobody_elses_move() -> None:
    runners = [uuid4() for _ in range(3)]
    before = shares(runners)
    after = shares(runners[:2])
    for runner in runners[:2]:
        assert before[runner] <= after[runner]
    assert after[runners[0]] | after[runners[1]] == set(RUNS)


def share_of(rl: Runledger) -> set[UUID]:
    """This process's runs, as a tick reads them: its other reads have caught the view up."""
    rl.fleet.rows.fresh()
    return set(rl.cleanup.share().of(RUNS))


def test_a_process_with_no_runner_joined_looks_at_everything(
    opened: Callable[..., Runledger],
) -> None:
    rl = opened()
    assert rl.cleanup.share().of(RUNS) == RUNS


def test_live_runners_of_one_kit_divide_and_a_silent_ones_share_is_taken(
    opened: Callable[..., Runledger], clock: Clock
) -> None:
    stores = [opened() for _ in range(3)]
    runners = [rl.runner(f"w{i}") for i, rl in enumerate(stores)]
    for runner in runners:
        runner.join()
    parts = [share_of(rl) for rl in stores]
    assert sum(len(p) for p in parts) == len(RUNS)
    assert set().union(*parts) == set(RUNS)

    bound = max(FLOOR_S, BEATS * runners[0].membership.every_s)
    clock.advance(bound + 1)  # w2 stops beating; the others beat
    for runner in runners[:2]:
        runner.membership.beat()
    left = [share_of(rl) for rl in stores[:2]]
    assert left[0] | left[1] == set(RUNS)
    assert not left[0] & left[1]
    assert parts[0] <= left[0] and parts[1] <= left[1]


def test_a_runner_of_another_kit_is_never_left_a_run_alone(
    opened: Callable[..., Runledger], store_url: str, clock: Clock
) -> None:
    served = opened()
    bare = bootstrap(Settings(database_url=store_url, **NO_BACKOFF), Registry(), clock=clock)
    try:
        served.runner("served").join()
        bare.runner("bare").join()
        assert share_of(served) == share_of(bare) == set(RUNS)
    finally:
        bare.close()


def test_a_runner_whose_ticks_fail_stops_beating_and_the_others_take_its_runs(
    opened: Callable[..., Runledger], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = [opened(), opened()]
    good, bad = stores[0].runner("good"), stores[1].runner("bad")
    good.join()
    bad.join()
    assert share_of(stores[0]) < set(RUNS)
    bound = max(FLOOR_S, BEATS * good.membership.every_s)
    real_tick, ticks, failing = bad.legs.tick, [0], [True]

    def tick(stop: threading.Event | None = None) -> object:
        ticks[0] += 1
        if failing[0]:
            raise RuntimeError("this runner's disk is full")
        return real_tick(stop)

    def ticked(more: int) -> None:
        wanted, deadline = ticks[0] + more, time.monotonic() + 30
        while ticks[0] < wanted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ticks[0] >= wanted

    monkeypatch.setattr(bad.legs, "tick", tick)
    stop = threading.Event()
    running = threading.Thread(target=bad.run, args=(0.02, stop), daemon=True)
    running.start()
    try:
        ticked(2)
        clock.advance(bound + 1)
        ticked(3)  # ticks begun after the clock moved, every one failing
        good.membership.beat()
        assert share_of(stores[0]) == set(RUNS)

        failing[0] = False
        ticked(3)  # one that ends well, then ones that beat again
        good.membership.beat()
        assert share_of(stores[0]) < set(RUNS)
    finally:
        stop.set()
        running.join(30)


def test_one_tick_beside_a_live_runner_looks_at_every_run(opened: Callable[..., Runledger]) -> None:
    live, asked = opened(), opened()
    live.runner("live").join()
    runs = auto_runs(asked, 16)
    asked.runner("once").once()
    assert all("once" in workers(asked, run) for run in runs)


# --- a leg that goes on while the fleet changes ------------------------------------------------


def test_a_runner_that_joins_during_an_advance_leg_is_left_its_share_of_the_page(
    opened: Callable[..., Runledger], clock: Clock
) -> None:
    first, second = opened(), opened()
    first.runner("first").join()
    runs = auto_runs(first, 16)

    def beat() -> None:  # said before each run of the leg: the second joins before the first run
        if second.fleet.ours:
            return
        second.runner("second").join()
        clock.advance(AGAIN_S + 0.01)
        first.fleet.rows.fresh()

    report = first.runs.advance_leg("first", beat=beat)
    ours = set(first.cleanup.share().of(runs))
    assert 0 < len(ours) < len(runs)
    assert {run for run in runs if "first" in workers(first, run)} == ours
    assert report.dispatched == len(ours)


def test_a_runner_that_joins_during_a_cleanup_leg_is_left_its_share_of_the_next_passes(
    opened: Callable[..., Runledger], clock: Clock, game: World
) -> None:
    first, second = opened(cleanup_run_batch=4), opened()
    runner = first.runner("first")
    runner.join()
    runs = auto_runs(first, 16)
    first.runs.advance_leg("first")  # every run completes alone, its two creatures to give back
    before: list[set[UUID]] = []

    def beat() -> None:  # before the leg, then before each pass: the second joins after one
        before.append({run for run in runs if not first.queries.unresolved_entries(run)})
        if len(before) == 3:
            second.runner("second").join()
            clock.advance(AGAIN_S + 0.01)
            first.fleet.rows.fresh()

    runner.legs.beat = beat
    runner.cleanup_leg()
    first_pass, later = before[2], set(runs) - before[2]
    assert len(first_pass) == 4
    ours = set(first.cleanup.share().of(runs))
    given_back = {run for run in later if not first.queries.unresolved_entries(run)}
    assert given_back and given_back <= ours  # a pass finds a page's share: some, maybe not all
    assert later - ours  # the second's runs are left to it
    # The world agrees: it was asked to take back what those runs made, and no other run's.
    asked = {key.split(":")[0] for key in game.reverts}
    assert asked == {str(run) for run in first_pass | given_back}


def test_a_runner_beats_through_a_long_advance_leg_so_its_share_is_not_taken(
    opened: Callable[..., Runledger], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = opened(), opened()
    busy, other = first.runner("busy"), second.runner("other")
    busy.join()
    other.join()
    auto_runs(first, 16)
    bound = max(FLOOR_S, BEATS * busy.membership.every_s)
    slow = first.runs.leg._advance_run
    seen: list[set[UUID]] = []

    def advance_run(*args: object) -> bool:  # each run takes a while: the leg outlasts the bound
        clock.advance(bound / 2)
        other.membership.beat()
        seen.append(share_of(second))
        return slow(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(first.runs.leg, "_advance_run", advance_run)
    busy.tick()
    assert len(seen) >= 3  # its share of the runs: the leg outlasts the bound
    assert all(part < set(RUNS) for part in seen)


# --- two runners on one PostgreSQL store, on the real clock ------------------------------------


@pytest.fixture
def two(pg_url: str, registry: Registry, game: object) -> Iterator[list[Runledger]]:
    stores = [bootstrap(Settings(database_url=pg_url, **NO_BACKOFF), registry) for _ in range(2)]
    yield stores
    for rl in stores:
        rl.close()


def auto_runs(rl: Runledger, count: int) -> list[UUID]:
    """Runs of one auto phase whose one step makes two creatures: they end on their own, and
    the cleanup leg gives back what they made."""
    document = spec(phase("play", makes("spawn", "a", "b", action=GAME_SPAWN)))
    return [rl.runs.start(document) for _ in range(count)]


def workers(rl: Runledger, run: UUID) -> set[str]:
    """Every worker named on the events of the run's step and of what it made."""
    ids = [Step.create_id(run, "spawn"), *made(run, "spawn", "a", "b")]
    named = set()
    for aggregate_id in ids:
        for stored in rl.app.recorder.select_events(aggregate_id):
            worker = getattr(rl.app.mapper.to_domain_event(stored), "worker", None)
            if worker is not None:
                named.add(worker)
    return named


def given_back(rl: Runledger, runs: list[UUID], within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        rows = rl.queries.runs(runs, rl.clock(), rl.settings.max_revert_attempts)
        done = len(rows) == len(runs) and all(r.status == "completed" for r in rows)
        if done and not any(rl.queries.unresolved_entries(r) for r in runs):
            return
        time.sleep(0.1)
    raise AssertionError("the runs were not all done and given back in time")


def ticking(runner: Runner, stop: threading.Event) -> threading.Thread:
    """A runner that beats and ticks, and on ``stop`` falls silent as a killed one does: it
    never says it left."""

    def loop() -> None:
        while not stop.is_set():
            runner.membership.beat()
            runner.tick(stop)
            stop.wait(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


@pytest.mark.postgres
def test_two_runners_divide_the_runs_and_one_finishes_when_the_other_falls_silent(
    two: list[Runledger],
) -> None:
    runners = [rl.runner(name) for rl, name in zip(two, ("left", "right"), strict=True)]
    for runner in runners:
        runner.join()
    stops = [threading.Event(), threading.Event()]
    threads = [ticking(r, s) for r, s in zip(runners, stops, strict=True)]
    try:
        first = auto_runs(two[0], 16)
        given_back(two[0], first, 60)
        named = [workers(two[0], run) for run in first]
        assert all(len(n) == 1 for n in named), named
        assert set().union(*named) == {"left", "right"}

        stops[1].set()
        threads[1].join(30)
        later = auto_runs(two[0], 16)
        given_back(two[0], later, 30 + FLOOR_S)
        assert all(workers(two[0], run) == {"left"} for run in later)
    finally:
        for stop in stops:
            stop.set()
        for thread in threads:
            thread.join(30)

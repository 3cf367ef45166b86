"""A sweep pass divides its runs between lanes worked at once (sweep/lanes.py): each lane is
a pass of its own, durable per call, and together they give each entry back exactly once."""

from __future__ import annotations

import threading

import pytest

from runledger.application.services.sweep.lanes import at_once, divide, in_lanes
from tests.conftest import Factory
from tests.support.playing import Clock, ended_run, key
from tests.support.reading import entry, lines, status
from tests.support.world import World


def test_runs_are_dealt_to_lanes_in_turn_and_no_lane_is_empty() -> None:
    assert divide([1, 2, 3, 4, 5], 2) == [[1, 3, 5], [2, 4]]
    assert divide([1], 3) == [[1]]
    assert divide([], 2) == []


def test_lanes_are_worked_at_once_and_answer_in_lane_order() -> None:
    together = threading.Barrier(3, timeout=10)  # breaks unless all three lanes are in at once

    def work(part: list[int]) -> int:
        together.wait()
        return sum(part)

    assert in_lanes(work, [1, 2, 3, 4, 5, 6], 3) == [5, 7, 9]


def test_a_lane_that_fails_is_raised_once_every_lane_has_ended() -> None:
    ended: list[int] = []

    def work(part: list[int]) -> None:
        if part[0] == 2:
            raise ValueError("lane two")
        threading.Event().wait(0.2)  # still working when lane two has failed
        ended.append(part[0])

    with pytest.raises(ValueError, match="lane two"):
        in_lanes(work, [1, 2, 3], 3)
    assert sorted(ended) == [1, 3]


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_lanes_give_each_entry_back_once_and_log_each_call_and_run(
    make_runledger: Factory, world: World, clock: Clock, lanes: int
) -> None:
    rl = make_runledger(cleanup_run_batch=10, cleanup_lanes=lanes)
    assert rl.cleanup.lanes == lanes
    runs = dict(ended_run(rl, [f"r{n}a", f"r{n}b"]) for n in range(7))
    summaries = rl.cleanup.sweep("w1")
    assert {r: s.reverted for r, s in summaries.items()} == dict.fromkeys(runs, 2)
    assert world.reverts == {key(run): 1 for run in runs}
    for run, made in runs.items():
        assert status(rl, run) == "complete"
        assert [entry(rl, m).status for m in made] == ["reverted", "reverted"]
        assert len(lines(rl, run, "cleanup.reverted")) == 1
        [swept] = lines(rl, run, "cleanup.swept")
        assert swept.detail["reverted"] == 2


def test_the_default_is_two_lanes_on_postgresql_and_one_on_sqlite(
    make_runledger: Factory, store_url: str
) -> None:
    assert make_runledger().cleanup.lanes == (1 if store_url.startswith("sqlite") else 2)


def test_more_lanes_than_the_bound_are_refused() -> None:
    with pytest.raises(ValueError, match="at most 8 lanes"):
        at_once([lambda: None] * 9)

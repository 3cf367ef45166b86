"""A pass carries a run's last verdict and summary line into the next run's first save."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

from tests.conftest import Factory
from tests.support.by_hand import claim
from tests.support.playing import SPAWN, Clock, ended_run, key
from tests.support.reading import entry, lines, status
from tests.support.world import World


def test_a_runs_last_verdict_rides_with_the_next_runs_first_claim(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(cleanup_run_batch=2, cleanup_lanes=1)
    runs = dict([ended_run(rl, ["a1"]), ended_run(rl, ["b1"])])
    saves: list[int] = []
    save = rl.app.save

    def counted(*objs: Any, **kwargs: Any) -> Any:
        saves.append(len(objs))
        return save(*objs, **kwargs)

    rl.app.save = counted  # type: ignore[method-assign]
    summaries = rl.cleanup.sweep("w1")
    # claim 1; verdict 1 + line + swept line + claim 2; verdict 2 + line + swept line.
    assert saves == [1, 4, 3]
    assert {r: s.reverted for r, s in summaries.items()} == dict.fromkeys(runs, 1)
    assert world.reverts == {key(r): 1 for r in runs}
    for run, [made] in runs.items():
        assert (status(rl, run), entry(rl, made).status) == ("complete", "reverted")
        [swept] = lines(rl, run, "cleanup.swept")
        assert swept.detail["reverted"] == 1


def test_a_carried_verdict_whose_save_lost_to_another_worker_is_still_given(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(cleanup_run_batch=2, cleanup_lanes=1)
    runs = dict([ended_run(rl, ["a1"]), ended_run(rl, ["b1"])])
    other = {key(run): made for run, [made] in zip(runs, reversed(runs.values()), strict=True)}
    taken: list[UUID] = []

    def answer(resources: list[dict[str, Any]], idempotency_key: str) -> Any:
        if not taken:  # while the first call is out, another worker claims the next run's entry
            taken.append(other[idempotency_key])
            assert claim(rl, taken[0], "w2", clock.now + timedelta(seconds=40), 3)
        return {"ok": True}

    world.answer("revert", SPAWN, answer)
    summaries = rl.cleanup.sweep("w1")
    [first] = [run for run, [made] in runs.items() if made != taken[0]]
    [second] = [run for run in runs if run != first]
    # The save holding the first run's verdict and the second's claim lost: the verdict is
    # judged again on fresh state and saved; the second run is left to the worker holding it.
    assert world.reverts == {key(first): 1}
    assert (status(rl, first), entry(rl, runs[first][0]).status) == ("complete", "reverted")
    assert summaries[first].reverted == 1
    assert entry(rl, taken[0]).claim_worker == "w2"
    assert summaries[second].attempted == 0

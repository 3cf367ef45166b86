"""Queries.one_catch_up: a sweep's reads share one catch-up of the views, made as they start;
every other read, and every read of another thread meanwhile, still catches up first."""

from __future__ import annotations

import threading

from runledger.application.runledger import Runledger
from runledger.projections.queries import Queries
from tests.support.playing import Clock, ended_run
from tests.support.world import World


def counted(rl: Runledger) -> tuple[Queries, list[str]]:
    calls: list[str] = []

    def fresh() -> int:
        calls.append(threading.current_thread().name)
        return rl.projector.catch_up()

    return Queries(rl.backend, fresh=fresh), calls


def test_reads_in_one_catch_up_share_it_and_see_everything_saved_before_it(
    rl: Runledger, world: World, clock: Clock
) -> None:
    queries, calls = counted(rl)
    run, [c1] = ended_run(rl, ["c1"])
    now = rl.clock()
    with queries.one_catch_up():
        assert queries.candidate_runs(now, 3, 10) == [run]
        assert [r.run_id for r in queries.runs([run], now, 3)] == [run]
        rows = queries.retryable_entries(run, now, 3, overdue_leases_only=False)
        assert [r.entry_id for r in rows] == [c1]
    assert len(calls) == 1
    queries.candidate_runs(now, 3, 10)
    assert len(calls) == 2


def test_another_threads_reads_catch_up_while_one_thread_holds_its_catch_up(
    rl: Runledger, world: World, clock: Clock
) -> None:
    queries, calls = counted(rl)
    ended_run(rl, ["c1"])
    now = rl.clock()
    with queries.one_catch_up():
        other = threading.Thread(target=queries.candidate_runs, args=(now, 3, 10), name="api")
        other.start()
        other.join()
        queries.candidate_runs(now, 3, 10)
    assert calls == [threading.current_thread().name, "api"]

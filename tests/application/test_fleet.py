"""Issue 9: runners record themselves — what each loaded, its heartbeat, live, gone or stopped."""

from __future__ import annotations

import os
import socket
import threading
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from runledger.application.bootstrap import init_store
from runledger.application.errors import NotInitialised
from runledger.application.runledger import Runledger
from runledger.application.services.fleet import Serving
from runledger.application.services.running.runner import Runner, TickReport
from runledger.application.settings import Settings
from runledger.domain.runner_record import RunnerRecord, RunnerStopped, runner_state
from runledger.projections.rebuild import rebuild
from tests.conftest import Opener
from tests.support.playing import GAME as MODULE
from tests.support.playing import GAME_SPAWN as SPAWN
from tests.support.playing import START, Clock
from tests.support.world import LEASE, World


def test_a_record_starts_with_what_was_loaded_and_stops_once() -> None:
    record = RunnerRecord.start(uuid4(), "w1", "host", 42, ["m"], ["m.a"], ["m.l"], START)
    later = START + timedelta(seconds=5)
    record.stop(later)
    events = record.collect_events()
    assert [type(e) for e in events] == [RunnerRecord.Started, RunnerRecord.Stopped]
    assert record.stopped_at == later
    with pytest.raises(RunnerStopped):
        record.stop(later)


def test_a_runner_is_live_up_to_the_bound_gone_after_it_and_stopped_whatever_its_beat() -> None:
    bound = timedelta(seconds=60)
    assert runner_state(False, START, START + bound, bound) == "live"
    assert runner_state(False, START, START + bound + timedelta(seconds=1), bound) == "gone"
    assert runner_state(False, None, START, bound) == "gone"
    assert runner_state(True, START, START, bound) == "stopped"


def listed(rl: Runledger) -> dict[str, Any]:
    """Each runner's state by worker name, the views caught up first."""
    rl.projector.catch_up()
    return {info.worker: info for info in rl.fleet.listing(rl.clock())}


def serving(rl: Runledger) -> Serving:
    rl.projector.catch_up()
    return rl.fleet.serving(rl.clock())


def heartbeats(rl: Runledger) -> list[tuple[str, float]]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(
            rl.backend.sql("SELECT runner_id, beat_at FROM {rl_heartbeats} ORDER BY runner_id")
        )
        return [(row["runner_id"], row["beat_at"]) for row in cursor.fetchall()]


def test_a_runner_joins_with_what_it_loaded_and_appears_live(
    opened: Opener, game: World, clock: Clock
) -> None:
    rl = opened()
    runner_id = rl.fleet.join("w1", [MODULE], [SPAWN], [LEASE])
    (info,) = listed(rl).values()
    assert (info.runner_id, info.worker, info.state) == (runner_id, "w1", "live")
    assert (info.host, info.pid) == (socket.gethostname(), os.getpid())
    assert (info.modules, info.actions, info.leases) == ((MODULE,), (SPAWN,), (LEASE,))
    assert info.started_at == info.last_beat == clock.now and info.stopped_at is None


def test_a_runner_records_the_modules_of_what_was_registered_on_its_registry(
    opened: Opener, game: World
) -> None:
    rl = opened()
    rl.runner("w1").once()
    info = listed(rl)["w1"]
    assert (info.modules, info.actions, info.leases, info.state) == (
        (MODULE,),
        (SPAWN,),
        (LEASE,),
        "stopped",
    )


def test_a_runner_that_stops_beating_is_gone_after_the_bound_and_serves_nothing(
    opened: Opener, game: World, clock: Clock
) -> None:
    rl = opened(runner_gone_s=60)
    runner_id = rl.fleet.join("w1", [MODULE], [SPAWN], [LEASE])
    clock.advance(60)
    assert listed(rl)["w1"].state == "live"
    assert serving(rl).serves_action(SPAWN)
    clock.advance(1)
    assert listed(rl)["w1"].state == "gone"
    assert serving(rl) == Serving(frozenset(), frozenset(), frozenset())
    rl.fleet.beat(runner_id)
    assert listed(rl)["w1"].state == "live"
    assert listed(rl)["w1"].last_beat == clock.now


def test_a_runner_that_left_is_stopped_and_serves_nothing(opened: Opener, game: World) -> None:
    rl = opened()
    runner_id = rl.fleet.join("w1", [MODULE], [SPAWN], [LEASE])
    rl.fleet.leave(runner_id)
    info = listed(rl)["w1"]
    assert (info.state, info.stopped_at) == ("stopped", rl.clock())
    assert not serving(rl).serves_module(MODULE)
    with pytest.raises(RunnerStopped):
        rl.fleet.leave(runner_id)


def test_serving_is_the_union_of_what_the_live_runners_loaded(
    opened: Opener, game: World, clock: Clock
) -> None:
    rl = opened(runner_gone_s=30)
    rl.fleet.join("old", ["redis"], ["redis.set"], ["redis.key"])
    clock.advance(31)
    rl.fleet.join("a", [MODULE], [SPAWN], [LEASE])
    rl.fleet.join("b", ["sandbox", MODULE], ["sandbox.spawn", SPAWN], [])
    rl.fleet.leave(rl.fleet.join("left", ["quit"], ["quit.it"], ["quit.lease"]))
    found = serving(rl)
    assert found == Serving(
        frozenset({MODULE, "sandbox"}), frozenset({SPAWN, "sandbox.spawn"}), frozenset({LEASE})
    )
    assert found.serves_action("sandbox.spawn") and not found.serves_action("redis.set")
    assert found.serves_lease(LEASE) and not found.serves_lease("quit.lease")
    assert found.serves_module("sandbox") and not found.serves_module("redis")


def test_the_listing_is_newest_first_and_bounded(opened: Opener, clock: Clock) -> None:
    rl = opened()
    for n in range(5):
        rl.fleet.join(f"w{n}", [], [], [])
        clock.advance(1)
    rl.projector.catch_up()
    assert [i.worker for i in rl.fleet.listing(clock.now, limit=3)] == ["w4", "w3", "w2"]


def test_rebuilding_the_projections_keeps_the_runners_and_leaves_heartbeats_alone(
    opened: Opener, clock: Clock
) -> None:
    rl = opened()
    rl.fleet.leave(rl.fleet.join("gone-home", ["m"], ["m.a"], []))
    beating = rl.fleet.join("beating", ["m"], ["m.a"], ["m.l"])
    clock.advance(5)
    rl.fleet.beat(beating)
    before, beats = listed(rl), heartbeats(rl)
    assert rebuild(rl.app, rl.backend, verify=True).differences == []
    report = rebuild(rl.app, rl.backend)
    assert report.swapped and "runners" in report.views
    assert listed(rl) == before and heartbeats(rl) == beats
    assert before["beating"].state == "live" and before["gone-home"].state == "stopped"


class Crashing(Runner):
    """A runner whose second tick raises what no tick catches (an interrupt, say)."""

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        if getattr(self, "ticked", False):
            raise KeyboardInterrupt
        self.ticked = True
        return super().tick(stop)


def test_a_runner_beats_every_tick_and_leaves_when_stopped_or_interrupted(
    opened: Opener, game: World, clock: Clock
) -> None:
    rl = opened()
    runner = rl.runner("steady")
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(0.01, stop))
    thread.start()
    try:
        for _ in range(3):  # each beat moves the row to the clock's time of that tick
            clock.advance(10)
            _until(
                lambda: (
                    listed(rl).get("steady") is not None
                    and listed(rl)["steady"].last_beat == clock.now
                )
            )
    finally:
        stop.set()
        thread.join(10)
    assert listed(rl)["steady"].state == "stopped" and runner.runner_id is None
    crashing = Crashing(
        runs=rl.runs,
        starts=rl.starts,
        cleanup=rl.cleanup,
        reconciler=rl.reconciler,
        worker="crashing",
        fleet=rl.fleet,
        loaded=rl.loaded,
        settings=rl.settings,
    )
    with pytest.raises(KeyboardInterrupt):
        crashing.run(0.0, threading.Event())
    assert listed(rl)["crashing"].state == "stopped"


def _until(condition: Any, timeout: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("not reached in time")


def test_a_runner_joins_under_a_fresh_id_each_time_it_starts(opened: Opener) -> None:
    rl = opened()
    ids = {rl.fleet.join("same", [], [], []) for _ in range(3)}
    assert len(ids) == 3 and all(isinstance(i, UUID) and i.version == 4 for i in ids)


def test_init_on_a_store_from_before_runners_adds_their_tables_and_projects_old_records(
    opened: Opener, store_url: str
) -> None:
    rl = opened()
    rl.fleet.join("early", ["m"], [], [])
    with rl.backend.transaction(commit=True) as cursor:  # the store as an older init left it
        for table in ("rl_runners", "rl_heartbeats"):
            cursor.execute(f"DROP TABLE {rl.backend.qualify(table)}")
        cursor.execute(rl.backend.sql("DELETE FROM {rl_tracking} WHERE name = 'runners'"))
    with pytest.raises(NotInitialised, match=r"rl_runners, rl_heartbeats.*runledger init"):
        opened()
    init_store(Settings(database_url=store_url))
    again = opened()
    assert listed(again)["early"].state == "gone"  # its heartbeat went with the old table

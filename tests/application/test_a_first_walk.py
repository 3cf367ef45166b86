from __future__ import annotations

from runledger.application.runledger import Runledger
from tests.support.playing import Clock, key, makes, phase, spec
from tests.support.world import World


def test_a_completed_run_is_given_back_and_reads_complete(
    rl: Runledger, world: World, clock: Clock
) -> None:
    run = rl.runs.start(spec(phase("p1", makes("spawn", "c1"), advance="manual")))
    rl.runs.advance_leg("w1")  # the step is dispatched: the world makes c1, the ledger records it
    rl.runs.advance(run, "alice")  # alice advances the last phase: the run completes
    rl.cleanup.sweep("w1")
    status = rl.queries.run(run, rl.clock(), 3)
    assert status is not None and status.cleanup_status == "complete"
    assert world.reverts == {key(run): 1}

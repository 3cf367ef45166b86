from __future__ import annotations

from freezegun import freeze_time

from runledger.application.bootstrap import Runledger
from runledger.application.modules.protocol import Registry
from tests.world import World


def test_a_completed_run_is_given_back_and_reads_complete(
    make_runledger, registry: Registry
) -> None:
    world = World()
    world.install(registry, "world.spawn")
    rl: Runledger = make_runledger()
    with freeze_time("2026-12-02 12:00:00"):
        run = rl.ledger.start_run("festival")
        placeholder = rl.ledger.record_placeholder(run, "spawn", "world", "world.spawn", "k1")
        rl.ledger.supersede(placeholder, [{"kind": "creature", "ref": "c1"}])
        rl.ledger.complete_run(run)
        rl.cleanup.sweep("w1")
        status = rl.queries.run(run, rl.clock(), 3)
    assert status is not None and status.cleanup_status == "complete"
    assert world.reverts == {"k1": 1}

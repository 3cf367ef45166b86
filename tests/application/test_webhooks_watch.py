"""Facts no save records, on an SQLite file and on PostgreSQL: a runner gone and a projection
stuck are noticed by a sender's look, recorded once however often and by whomever it looks,
and sent to a real receiver."""

from __future__ import annotations

import json

import pytest

from runledger.application.runledger import Runledger
from tests.application.test_projection_stuck import stuck_store
from tests.conftest import Factory
from tests.support.playing import Clock
from tests.support.receiver import LOCAL, receiving
from tests.support.world import World


@pytest.fixture
def rl(make_runledger: Factory) -> Runledger:
    """The test's runledger, allowed to send to its receivers on 127.0.0.1."""
    return make_runledger(webhook_allow_networks=LOCAL)


def test_a_gone_runner_is_told_once(make_runledger: Factory, clock: Clock) -> None:
    rl, other = (make_runledger(runner_gone_s=60, webhook_allow_networks=LOCAL) for _ in "ab")
    with receiving() as receiver:
        rl.webhooks.add(receiver.url, ["runner.gone"], by="alice")
        runner_id = rl.fleet.join("gardener", ["garden"], [], [])
        sender = rl.sender("w1")
        assert sender.watcher is not None and sender.watcher.look() == 0  # live
        clock.advance(61)
        assert sender.watcher.look() == 1
        assert sender.watcher.look() == 0
        other_watcher = other.sender("w2").watcher
        assert other_watcher is not None and other_watcher.look() == 0  # recorded already
        assert sender.send_due() == 1
    [got] = receiver.received
    body = json.loads(got.body)
    assert body["event"] == "runner.gone" and body["runner_id"] == str(runner_id)
    assert body["worker"] == "gardener"


def test_a_stuck_projection_is_told(rl: Runledger, world: World, clock: Clock) -> None:
    with receiving() as receiver:
        rl.webhooks.add(receiver.url, ["projection.stuck"], by="alice")
        _, position, bad, _ = stuck_store(rl)
        sender = rl.sender("w1")
        assert sender.watcher is not None and sender.watcher.look() >= 1
        assert sender.send_due() >= 1
    told = [json.loads(r.body) for r in receiver.received]
    assert {t["position"] for t in told} == {position}
    assert all(t["event"] == "projection.stuck" and t["originator_id"] == str(bad) for t in told)


def test_nothing_is_recorded_without_a_subscription_that_wants_it(
    rl: Runledger, clock: Clock
) -> None:
    rl.webhooks.add("https://example.com/hook", ["run.aborted"], by="alice")
    rl.fleet.join("gardener", ["garden"], [], [])
    clock.advance(3600)
    sender = rl.sender("w1")
    assert sender.watcher is not None and sender.watcher.look() == 0
    assert sender.send_due() == 0

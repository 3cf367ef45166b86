"""Webhooks from the outbox, on an SQLite file and on PostgreSQL: a fact and its deliveries are
saved together, a real HTTP receiver gets each signed, failures are retried and every attempt is
kept."""

from __future__ import annotations

import json

import pytest

from runledger.application.errors import BadRequest, NotFound
from runledger.application.runledger import Runledger
from runledger.application.services.webhooks_sign import signature
from runledger.domain.delivery import Delivery
from tests.conftest import Factory
from tests.support.playing import SPAWN, Clock, ended_run, makes, start
from tests.support.receiver import LOCAL, Received, receiving
from tests.support.world import World, answering, throws

ALL = ["run.needs_person", "run.aborted", "runner.gone", "projection.stuck"]


@pytest.fixture
def rl(make_runledger: Factory) -> Runledger:
    """The test's runledger, allowed to send to its receivers on 127.0.0.1."""
    return make_runledger(webhook_allow_networks=LOCAL)


def signed(secret: str, got: Received) -> bool:
    header = got.headers["Runledger-Signature"]
    at = int(header.split(",")[0].removeprefix("t="))
    return signature(secret, got.body, at) == header


def sent(rl: Runledger, rounds: int = 1) -> int:
    sender = rl.sender("w1")
    return sum(sender.send_due() for _ in range(rounds))


def test_an_aborted_run_is_told_signed_to_a_real_receiver(
    rl: Runledger, world: World, clock: Clock
) -> None:
    with receiving() as receiver:
        added = rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        run = start(rl, makes("spawn", "c1"))
        rl.ledger.abort_run(run, "the phase timed out", by="bob")
        assert sent(rl) == 1
    [got] = receiver.received
    body = json.loads(got.body)
    assert body["event"] == "run.aborted" and body["run_id"] == str(run)
    assert body["reason"] == "the phase timed out" and body["by"] == "bob"
    assert got.headers["Runledger-Event"] == "run.aborted"
    assert signed(added.secret, got)
    [delivery] = rl.webhooks.deliveries(added.subscription.subscription_id, 10)
    assert got.headers["Runledger-Delivery"] == str(delivery.id)
    assert delivery.state == "delivered" and [a.status for a in delivery.attempts] == [200]
    assert sent(rl) == 0  # delivered once: nothing is due again


def test_a_run_whose_cleanup_became_incomplete_is_told(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(max_revert_attempts=2, webhook_allow_networks=LOCAL)
    world.answer("revert", SPAWN, throws())
    with receiving() as receiver:
        added = rl.webhooks.add(receiver.url, ["run.needs_person"], by="alice")
        run, [c1] = ended_run(rl, ["c1"])
        rl.cleanup.sweep("w1")
        assert sent(rl) == 0  # one attempt left: nobody is needed yet
        rl.cleanup.sweep("w1")
        assert sent(rl) == 1
    [got] = receiver.received
    body = json.loads(got.body)
    assert body["event"] == "run.needs_person" and body["run_id"] == str(run)
    assert [e["entry_id"] for e in body["entries"]] == [str(c1)]
    assert signed(added.secret, got)


def test_a_drift_is_told_and_other_subscriptions_are_not(
    rl: Runledger, world: World, clock: Clock
) -> None:
    world.answer("revert", SPAWN, answering({"drifted": True, "current": {"hp": 7}}))
    with receiving() as receiver:
        rl.webhooks.add(receiver.url, ["run.needs_person"], by="alice")
        only_aborts = rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        ended_run(rl, ["c1"])
        rl.cleanup.sweep("w1")
        assert sent(rl) == 1
    assert json.loads(receiver.received[0].body)["entries"][0]["state"] == "drifted"
    assert rl.webhooks.deliveries(only_aborts.subscription.subscription_id, 10) == []


def test_a_receiver_that_fails_twice_gets_it_on_the_third_attempt(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(webhook_delay_s=10, webhook_allow_networks=LOCAL)
    with receiving(500, 503) as receiver:
        added = rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        rl.ledger.abort_run(start(rl, makes("spawn", "c1")), "no", by="bob")
        assert sent(rl) == 1
        clock.advance(7)
        assert sent(rl) == 0  # its back-off, 10 s less its jitter at most, has not passed
        clock.advance(8)
        assert sent(rl) == 1
        clock.advance(30)
        assert sent(rl) == 1
    assert len(receiver.received) == 3
    assert len({r.headers["Runledger-Delivery"] for r in receiver.received}) == 1
    [delivery] = rl.webhooks.deliveries(added.subscription.subscription_id, 10)
    assert [a.status for a in delivery.attempts] == [500, 503, 200]
    assert delivery.state == "delivered"
    failed = rl.telemetry.registry.get_sample_value(
        "runledger_webhook_deliveries_failed_total", {"event": "run.aborted"}
    )
    assert failed == 2  # what the shipped alert rule RunledgerWebhookFailing reads


def test_a_receiver_that_never_answers_is_marked_failed_after_its_attempts(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(webhook_attempts=2, webhook_delay_s=1, webhook_allow_networks=LOCAL)
    with receiving() as receiver:
        dead = receiver.url
    added = rl.webhooks.add(dead, ["run.aborted"], by="alice")
    rl.ledger.abort_run(start(rl, makes("spawn", "c1")), "no")
    assert sent(rl) == 1
    clock.advance(5)
    assert sent(rl) == 1
    clock.advance(60)
    assert sent(rl) == 0
    [delivery] = rl.webhooks.deliveries(added.subscription.subscription_id, 10)
    assert delivery.state == "failed"
    assert [a.status for a in delivery.attempts] == [None, None]
    assert all(a.error for a in delivery.attempts)


def test_two_senders_send_one_delivery_once(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl, other = (make_runledger(webhook_allow_networks=LOCAL) for _ in "ab")
    with receiving() as receiver:
        rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        rl.ledger.abort_run(start(rl, makes("spawn", "c1")), "no")
        first = rl.sender("a")
        claimed = [first._claim(d) for d in rl.webhooks.rows.due(clock.now, 10)]
        assert other.sender("b").send_due() == 0  # claimed by the first
        for delivery in claimed:
            assert isinstance(delivery, Delivery)
            first._send(delivery)
    assert len(receiver.received) == 1


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "http://user:pw@example.com/hook",
        "http://example.com/ho\x00ok",
        "http://example.com/\r\nX-Evil: 1",
        "http://exa mple.com/",
        "http:///nohost",
        "http://example.com:99999999/",
        "https://example.com/" + "a" * 3000,
        "",
    ],
)
def test_a_hostile_url_is_refused_naming_the_field(rl: Runledger, url: str) -> None:
    with pytest.raises(BadRequest, match=r"^url: "):
        rl.webhooks.add(url, ["run.aborted"], by="alice")
    assert rl.webhooks.listing() == []


def test_events_must_be_known_ones(rl: Runledger) -> None:
    for events in ([], ["run.exploded"], ["run.aborted", "<b>x</b>"]):
        with pytest.raises(BadRequest, match=r"^events: "):
            rl.webhooks.add("https://example.com/hook", events, by="alice")


def test_a_disabled_or_removed_subscription_is_not_queued(
    rl: Runledger, world: World, clock: Clock
) -> None:
    added = rl.webhooks.add("https://example.com/hook", ALL, by="alice")
    sid = added.subscription.subscription_id
    assert rl.webhooks.switch(sid, False, by="alice").enabled is False
    rl.ledger.abort_run(start(rl, makes("spawn", "c1")), "no")
    assert rl.webhooks.deliveries(sid, 10) == []
    rl.webhooks.remove(sid, by="alice")
    assert rl.webhooks.listing() == []
    with pytest.raises(NotFound):
        rl.webhooks.deliveries(sid, 10)
    with pytest.raises(NotFound):
        rl.webhooks.remove(sid, by="alice")

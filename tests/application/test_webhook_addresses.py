"""Where a webhook may go (issue 30): a URL whose host is or resolves to a loopback, private,
link-local, unspecified, multicast, reserved or carrier-grade NAT address is refused when it is
subscribed, and again at each delivery against the addresses its host resolves to then, unless
RUNLEDGER_WEBHOOK_ALLOW_NETWORKS allows the network. Resolution is the one port faked here: a
table of names the test controls, as DNS would answer them."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from runledger.application.errors import BadRequest, ConfigError
from runledger.application.runledger import Runledger
from runledger.application.services.webhooks import Webhooks
from runledger.application.services.webhooks_addresses import Destinations, Resolve
from runledger.application.services.webhooks_send import Sender
from runledger.application.settings import Settings
from runledger.domain.delivery import Delivery
from tests.conftest import Factory
from tests.support.playing import Clock, makes, start
from tests.support.receiver import LOCAL, receiving
from tests.support.world import World

PUBLIC = "93.184.216.34"

REFUSED = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.8.9.10:8080/hook", "loopback"),
    ("http://localhost/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("https://10.0.0.5/", "private"),
    ("http://172.16.3.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[::ffff:169.254.169.254]/", "link-local"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://[::ffff:10.0.0.1]/", "private"),
]


def table(names: dict[str, list[str]]) -> Resolve:
    def resolve(host: str, _port: int) -> list[str]:
        if host not in names:
            raise OSError(f"{host} does not resolve")
        return names[host]

    return resolve


def hooks(rl: Runledger, destinations: Destinations) -> Webhooks:
    """The runledger's webhooks, resolving names through ``destinations``."""
    w = rl.webhooks
    return Webhooks(
        app=w.app, streams=w.streams, rows=w.rows, clock=w.clock, destinations=destinations
    )


def abort_one(rl: Runledger) -> None:
    rl.ledger.abort_run(start(rl, makes("spawn", "c1")), "told", by="bob")


@pytest.mark.parametrize(("url", "kind"), REFUSED)
def test_a_url_into_a_network_only_runledger_reaches_is_refused(url: str, kind: str) -> None:
    problem = Destinations().url_problem(url)
    assert problem is not None and f"{kind} address" in problem
    assert "RUNLEDGER_WEBHOOK_ALLOW_NETWORKS" in problem


@pytest.mark.parametrize("url", ["http://93.184.216.34/hook", "https://[2606:4700::1111]/"])
def test_a_public_address_is_taken(url: str) -> None:
    assert Destinations().url_problem(url) is None


def test_a_name_resolving_to_loopback_is_refused_and_one_bad_address_of_many_is_enough() -> None:
    names = {"hooks.test": ["127.0.0.1"], "mixed.test": [PUBLIC, "10.1.2.3"]}
    where = Destinations(resolve=table(names))
    assert "hooks.test resolves to 127.0.0.1, a loopback" in str(
        where.url_problem("http://hooks.test/")
    )
    assert "10.1.2.3, a private" in str(where.url_problem("https://mixed.test/"))


def test_an_allowed_network_is_taken_in_every_form() -> None:
    where = Destinations(allowed=(ip_network("127.0.0.0/8"), ip_network("10.0.0.0/8")))
    for url in ("http://127.0.0.1:9/", "http://[::ffff:127.0.0.1]/", "http://10.9.8.7/"):
        assert where.url_problem(url) is None
    assert "private" in str(where.url_problem("http://192.168.0.1/"))


def test_the_allow_list_is_read_from_the_environment_and_a_bad_one_is_refused() -> None:
    given = {"RUNLEDGER_WEBHOOK_ALLOW_NETWORKS": "10.0.0.0/8, 127.0.0.1/32,fd00::/8"}
    assert [str(n) for n in Settings.from_env(given).webhook_allow_networks] == [
        "10.0.0.0/8",
        "127.0.0.1/32",
        "fd00::/8",
    ]
    assert Settings.from_env({}).webhook_allow_networks == ()
    for bad in ("10.0.0.0/33", "10.0.0.1/8", "localhost", "10.0.0.0/8,\x1b[31m"):
        with pytest.raises(ConfigError, match="RUNLEDGER_WEBHOOK_ALLOW_NETWORKS is invalid"):
            Settings.from_env({"RUNLEDGER_WEBHOOK_ALLOW_NETWORKS": bad})


def test_subscribing_a_forbidden_url_is_refused_naming_the_field(rl: Runledger) -> None:
    for url in ("http://169.254.169.254/", "http://localhost:8080/", "http://[::ffff:7f00:1]/"):
        with pytest.raises(BadRequest, match=r"^url: .* is refused: .* address"):
            rl.webhooks.add(url, ["run.aborted"], by="alice")
    assert rl.webhooks.listing() == []


def test_an_allowed_network_is_subscribed_and_delivered_to(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(webhook_allow_networks=LOCAL)
    with receiving() as receiver:
        rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        abort_one(rl)
        assert rl.sender("w1").send_due() == 1
    assert len(receiver.received) == 1


def test_a_name_resolved_to_an_allowed_address_is_sent_with_its_own_host_header(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(webhook_allow_networks=LOCAL)
    where = Destinations(rl.settings.webhook_allow_networks, table({"hooks.test": ["127.0.0.1"]}))
    with receiving() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        told = hooks(rl, where)
        told.add(f"http://hooks.test:{port}/hook", ["run.aborted"], by="alice")
        abort_one(rl)
        assert Sender(webhooks=told, settings=rl.settings, clock=rl.clock, worker="w1").send_due()
    [got] = receiver.received
    assert got.headers["Host"] == f"hooks.test:{port}"


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_name_that_comes_to_resolve_to_loopback_is_not_sent_to(
    rl: Runledger, world: World, clock: Clock, scheme: str
) -> None:
    names = {"hooks.test": [PUBLIC]}
    told = hooks(rl, Destinations(resolve=table(names)))
    with receiving() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        added = told.add(f"{scheme}://hooks.test:{port}/hook", ["run.aborted"], by="alice")
        names["hooks.test"] = [PUBLIC, "127.0.0.1"]  # the name is rebound after it was checked
        abort_one(rl)
        sender = Sender(webhooks=told, settings=rl.settings, clock=rl.clock, worker="w1")
        assert sender.send_due() == 1
        assert sender.send_due() == 0, "a refusal waits its back-off like any failure"
    assert receiver.received == []
    [delivery] = told.deliveries(added.subscription.subscription_id, 10)
    assert isinstance(delivery, Delivery) and delivery.state == "pending"
    [attempt] = delivery.attempts
    assert attempt.status is None and attempt.error is not None
    assert attempt.error.startswith("refused: hooks.test resolves to 127.0.0.1, a loopback")
    assert delivery.next_at is not None and delivery.next_at > rl.clock()


def test_a_refused_delivery_fails_once_its_attempts_are_used(
    make_runledger: Factory, world: World, clock: Clock
) -> None:
    rl = make_runledger(webhook_attempts=2, webhook_delay_s=1)
    names = {"hooks.test": [PUBLIC]}
    told = hooks(rl, Destinations(resolve=table(names)))
    added = told.add("http://hooks.test/hook", ["run.aborted"], by="alice")
    names["hooks.test"] = ["169.254.169.254"]
    abort_one(rl)
    sender = Sender(webhooks=told, settings=rl.settings, clock=rl.clock, worker="w1")
    assert sender.send_due() == 1
    clock.advance(5)
    assert sender.send_due() == 1
    [delivery] = told.deliveries(added.subscription.subscription_id, 10)
    assert delivery.state == "failed"
    assert all("link-local" in str(a.error) for a in delivery.attempts)

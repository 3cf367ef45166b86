"""The brake on guessing, on both stores: past RUNLEDGER_FAILED_AUTH_PER_MINUTE wrong bearer
tokens or sign-ins from one address in a minute, that address is answered 429 with Retry-After
(a right token from it too, for the rest of the window), the metric counts each refusal, and a
right token from another address is not slowed. Behind a trusted proxy the address is the
forwarded one; anyone else's X-Forwarded-For is ignored."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, Counter

from runledger.application.brake import MAX_ADDRESSES, WINDOW_S, Brake
from runledger.application.errors import ConfigError
from runledger.application.settings import Settings
from tests.support.api_support import (
    Api,
    Opener,
    api_fixture,
    api_rl_fixture,
    bearer,
    serving,
    shard_fixture,
)
from tests.support.console_support import csrf_of, live_server, unfrozen_clock_fixture

__all__ = ["api_fixture", "api_rl_fixture", "shard_fixture", "unfrozen_clock_fixture"]

WRONG = bearer("rl_" + "x" * 43)
RUNS = "/admin/events/runs"


def from_address(api: Api, host: str) -> TestClient:
    return TestClient(api.client.app, client=(host, 5000), raise_server_exceptions=False)


def braked_count(api: Api, door: str) -> float:
    metrics = api.client.get("/metrics").text
    found = re.search(rf'^runledger_auth_braked_total\{{door="{door}"\}} (\S+)$', metrics, re.M)
    return float(found.group(1)) if found else 0.0


def retry_after(answer: httpx.Response) -> int:
    assert answer.status_code == 429, answer.text
    wait = int(answer.headers["retry-after"])
    assert 1 <= wait <= WINDOW_S
    return wait


@pytest.fixture(name="proxied")
def proxied_fixture(opened: Opener) -> Iterator[Api]:
    """Served behind a trusted proxy at 10.0.0.2, braking after three failures."""
    served = serving(opened(trusted_proxies=("10.0.0.2",), failed_auth_per_minute=3))
    with served.client:
        yield served


def test_past_twenty_wrong_tokens_an_address_waits_and_another_address_does_not(
    api: Api,
) -> None:
    guesser, other = from_address(api, "10.0.0.1"), from_address(api, "10.0.0.9")
    for _ in range(20):
        assert guesser.get(RUNS, headers=WRONG).status_code == 401
    assert braked_count(api, "api") == 0
    retry_after(guesser.get(RUNS, headers=WRONG))
    right = bearer(api.secrets["viewer"])
    refused = guesser.get(RUNS, headers=right)  # the address is braked, whatever it sends
    retry_after(refused)
    assert "too many wrong tokens from this address" in refused.text
    assert other.get(RUNS, headers=right).status_code == 200
    assert other.get(RUNS, headers=WRONG).status_code == 401  # another address's own count
    assert braked_count(api, "api") == 2
    assert guesser.get(RUNS).status_code == 401  # no token at all: nothing guessed, not braked


def test_past_the_bound_wrong_sign_ins_wait_and_another_address_signs_in(api: Api) -> None:
    guesser, other = from_address(api, "10.0.0.1"), from_address(api, "10.0.0.9")
    csrf = csrf_of(guesser.get("/signin").text)
    form = {"csrf": csrf, "token": "rl_wrong", "next": "/runs"}
    for _ in range(20):
        assert guesser.post("/signin", data=form, follow_redirects=False).status_code == 401
    braked = guesser.post("/signin", data=form, follow_redirects=False)
    retry_after(braked)
    assert "Too many failed sign-ins from your address: try again in" in braked.text
    assert "Content-Security-Policy" in braked.headers  # a console page like any other
    right = {**form, "token": api.secrets["operator"]}
    retry_after(guesser.post("/signin", data=right, follow_redirects=False))
    other_form = {**right, "csrf": csrf_of(other.get("/signin").text)}
    assert other.post("/signin", data=other_form, follow_redirects=False).status_code == 303
    assert braked_count(api, "console") == 2
    assert braked_count(api, "api") == 0


def test_through_a_trusted_proxy_the_forwarded_address_is_braked(proxied: Api) -> None:
    proxy = from_address(proxied, "10.0.0.2")
    guesser = {**WRONG, "X-Forwarded-For": "198.51.100.7"}
    for _ in range(3):
        assert proxy.get(RUNS, headers=guesser).status_code == 401
    retry_after(proxy.get(RUNS, headers=guesser))
    # the client's own claim, left of what the proxy appended, changes nothing
    retry_after(proxy.get(RUNS, headers={**WRONG, "X-Forwarded-For": "1.2.3.4, 198.51.100.7"}))
    right = {**bearer(proxied.secrets["viewer"]), "X-Forwarded-For": "198.51.100.8"}
    assert proxy.get(RUNS, headers=right).status_code == 200


def test_an_untrusted_peer_cannot_dodge_the_brake_by_forwarding_headers(proxied: Api) -> None:
    guesser = from_address(proxied, "10.0.0.3")
    for n in range(3):
        headers = {**WRONG, "X-Forwarded-For": f"203.0.113.{n}"}
        assert guesser.get(RUNS, headers=headers).status_code == 401
    retry_after(guesser.get(RUNS, headers={**WRONG, "X-Forwarded-For": "203.0.113.99"}))


def test_a_real_server_brakes_one_loopback_address_and_serves_another(api: Api) -> None:
    with live_server(api.client.app) as url:
        port = url.rsplit(":", 1)[1]
        guessing = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(transport=guessing, timeout=30) as guesser:
            for _ in range(20):
                answer = guesser.get(f"http://127.0.0.1:{port}{RUNS}", headers=WRONG)
                assert answer.status_code == 401
            retry_after(guesser.get(f"http://127.0.0.1:{port}{RUNS}", headers=WRONG))
        other = httpx.HTTPTransport(local_address="127.0.0.3")
        with httpx.Client(transport=other, timeout=30) as person:
            right = bearer(api.secrets["viewer"])
            assert person.get(f"http://127.0.0.1:{port}{RUNS}", headers=right).status_code == 200


def test_the_window_slides_and_the_wait_is_what_is_left_of_it() -> None:
    now = [1000.0]
    refused = Counter("braked", "", ["door"], registry=CollectorRegistry())
    brake = Brake(per_minute=3, refused=refused, clock=lambda: now[0])
    for _ in range(3):
        assert brake.wait_s("a", "api") == 0
        brake.failed("a")
        now[0] += 10
    assert brake.wait_s("a", "api") == 30  # the first failure leaves the window at 1060
    assert brake.wait_s("b", "api") == 0
    now[0] = 1060.5
    assert brake.wait_s("a", "api") == 0  # one failure left the window: one more try
    brake.failed("a")
    assert brake.wait_s("a", "api") == 10
    assert refused.labels(door="api")._value.get() == 2


def test_the_brake_remembers_a_bounded_number_of_addresses() -> None:
    refused = Counter("braked", "", ["door"], registry=CollectorRegistry())
    brake = Brake(per_minute=1, refused=refused, clock=lambda: 5.0)
    for n in range(MAX_ADDRESSES + 50):
        brake.failed(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}")
    assert len(brake._failures) == MAX_ADDRESSES
    assert brake.wait_s("10.0.0.0", "api") == 0  # the stalest went first
    assert brake.wait_s(f"10.0.{(MAX_ADDRESSES + 49) // 256}.{(MAX_ADDRESSES + 49) % 256}", "x")


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("RUNLEDGER_FAILED_AUTH_PER_MINUTE", "0", "RUNLEDGER_FAILED_AUTH_PER_MINUTE is invalid"),
        ("RUNLEDGER_TRUSTED_PROXIES", "10.0.0.1, proxy<b>", "'proxy<b>' is not an IP address"),
    ],
)
def test_a_bad_brake_setting_is_refused_naming_it(name: str, value: str, said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        Settings.from_env({name: value})


def test_trusted_proxies_take_addresses_and_networks() -> None:
    settings = Settings.from_env({"RUNLEDGER_TRUSTED_PROXIES": "10.0.0.1, 10.1.0.0/16,::1"})
    assert settings.trusted_proxies == ("10.0.0.1", "10.1.0.0/16", "::1")

"""The webhooks page without a browser, on both stores: an admin sees each subscription (never
its secret) and its deliveries with every attempt; markup in a URL is text; others are refused."""

from __future__ import annotations

import pytest

from runledger.application.runledger import Runledger
from tests.support.api_support import Api, Opener, Shard, api_fixture, shard_fixture, shard_run
from tests.support.console_support import Console
from tests.support.receiver import LOCAL, receiving

__all__ = ["api_fixture", "shard_fixture"]


@pytest.fixture(name="api_rl")
def webhooks_api_rl(opened: Opener, shard: Shard) -> Runledger:
    """api_support's runledger, allowed to send to the receivers on 127.0.0.1."""
    return opened(retry_delays_s=(60.0,), max_revert_attempts=2, webhook_allow_networks=LOCAL)


def test_an_admin_sees_each_webhook_and_its_attempts(api: Api) -> None:
    console = Console(api)
    console.sign_in("admin")
    assert "No webhook is subscribed" in console.get("/webhooks").text
    with receiving(500) as receiver:
        added = api.rl.webhooks.add(receiver.url + "?<b>x</b>", ["run.aborted"], by="root")
        run = api.start(shard_run(1, advance="manual"))
        api.rl.ledger.abort_run(run, "no", by="alice")
        assert api.rl.sender("w1").send_due() == 1
    html = console.get("/webhooks").text
    assert str(added.subscription.subscription_id) in html and added.secret not in html
    assert "HTTP 500" in html and 'data-state="pending"' in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert 'href="/webhooks"' in html


@pytest.mark.parametrize("who", ["viewer", "operator"])
def test_only_admins_see_the_webhooks_page(api: Api, who: str) -> None:
    console = Console(api)
    console.sign_in(who)
    assert console.get("/webhooks").status_code == 403
    assert 'href="/webhooks"' not in console.get("/runs").text

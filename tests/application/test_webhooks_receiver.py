"""OPERATING.md's receiver check ("Webhooks: telling someone"), run as written against real
deliveries on an SQLite file and on PostgreSQL: it accepts what runledger signed, and refuses a
changed body, another secret, an old timestamp and a malformed header."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from runledger.application.runledger import Runledger
from runledger.application.services.webhooks_sign import signature
from runledger.domain.run import Run
from tests.conftest import Factory
from tests.support.receiver import LOCAL, receiving

OPERATING = Path(__file__).parents[2] / "OPERATING.md"
MARK = "<!-- tests/application/test_webhooks_receiver.py runs this block as written -->"

Verified = Callable[..., bool]


def documented() -> Verified:
    """The Python block OPERATING.md marks, defined as a receiver would paste it."""
    text = OPERATING.read_text(encoding="utf-8")
    assert MARK in text, "OPERATING.md lost the receiver's check this test runs"
    found = re.search(r"```python\n(.*?)```", text.split(MARK, 1)[1], re.DOTALL)
    assert found is not None
    space: dict[str, Any] = {}
    exec(compile(found.group(1), str(OPERATING), "exec"), space)  # the page's own block, as pasted
    verified: Verified = space["verified"]
    return verified


@pytest.fixture
def rl(make_runledger: Factory) -> Runledger:
    """The test's runledger, allowed to send to its receiver on 127.0.0.1."""
    return make_runledger(webhook_allow_networks=LOCAL)


@pytest.fixture
def verified() -> Verified:
    return documented()


def test_the_documented_check_accepts_a_real_delivery_and_refuses_forgeries(
    rl: Runledger, verified: Verified
) -> None:
    with receiving() as receiver:
        added = rl.webhooks.add(receiver.url, ["run.aborted"], by="alice")
        run = Run.start(uuid4(), "told", datetime.now(UTC))
        rl.app.save(run)
        run.abort("to check a signature", datetime.now(UTC))
        rl.app.save(run)
        assert rl.sender("w1").send_due() == 1
    [got] = receiver.received
    header, secret = got.headers["Runledger-Signature"], added.secret
    assert verified(secret, got.body, header)
    assert not verified(secret, got.body.replace(b"told", b"sold"), header)
    assert not verified("whsec_another", got.body, header)
    old = signature(secret, got.body, int(datetime.now(UTC).timestamp()) - 3600)
    assert not verified(secret, got.body, old)
    for broken in ("", "t=,v1=", "v1=00", "t=abc,v1=00", "t=1e9,v1=" + "0" * 64, "garbage"):
        assert not verified(secret, got.body, broken)

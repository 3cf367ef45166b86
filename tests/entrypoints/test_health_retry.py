"""/readyz not ready is a 503 like the store's trouble on every other route: it carries
Retry-After, the same number (application/errors.py RETRY_AFTER_S), with a token or without."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import RETRY_AFTER_S, StoreUnavailable
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.support.api_support import Api, serving
from tests.support.proxy import Proxy


def not_ready(api: Api, who: str | None) -> dict[str, object]:
    answer = api.get("/readyz", who)
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == str(RETRY_AFTER_S), answer.headers
    said: dict[str, object] = answer.json()
    assert said["ready"] is False, said
    return said


def back(api: Api) -> None:
    """Once the pool has a connection again: it reconnects in the background, backing off
    while the store was away, so on a busy machine its first may come after one wait."""
    deadline = time.monotonic() + 20
    while True:
        try:
            api.rl.projector.positions()
            return
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def ready(api: Api) -> None:
    answer = api.get("/readyz", None)
    assert answer.status_code == 200 and "Retry-After" not in answer.headers, answer.headers


@pytest.mark.postgres
@pytest.mark.slow
def test_a_store_away_is_not_ready_with_retry_after(proxied: tuple[str, Proxy]) -> None:
    url, proxy = proxied
    settings = Settings(database_url=url, connect_timeout_s=1, store_timeout_s=1.0)
    with bootstrap(settings, registry=Registry()) as rl:
        api = serving(rl)
        with api.client:
            ready(api)
            proxy.cut()
            not_ready(api, None)
            not_ready(api, "viewer")  # no token can be checked: only `ready` is said
            proxy.mend()
            back(api)
            ready(api)


def test_a_store_whose_tables_went_away_is_not_ready_with_retry_after(tmp_path: Path) -> None:
    """Not initialised under a running server: what the store check says, with the wait."""
    path = tmp_path / "ledger.sqlite3"
    init_store(Settings(database_url=f"sqlite:///{path}"))
    with bootstrap(Settings(database_url=f"sqlite:///{path}"), registry=Registry()) as rl:
        api = serving(rl)
        with api.client:
            ready(api)
            other = sqlite3.connect(path)
            other.execute("DROP TABLE rl_tracking")
            other.close()
            assert not_ready(api, None) == {"ready": False}
            said = not_ready(api, "viewer")
            store = {"name": "store", "ok": False, "detail": "no such table: rl_tracking"}
            assert said["checks"] == [store], said

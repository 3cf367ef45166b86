"""Issue 29: a store that blinks is a 503, not a 500, and nothing waits past a bound.

A real server (uvicorn in this process, on a spare port) reaches the shared PostgreSQL through a
proxy of the test's own, which the test cuts (connections dropped, new ones refused) or
black-holes (connections held, nothing answered, nothing closed), then mends. Every API and
console route answers 503 with Retry-After within the bound, never a traceback; after the mend,
200 again; and the server's log says the outage once when it starts and once when it ends.
The bounds are short here (a connection within 1 s, a round trip within 1 s + 2 s of slack).
An SQLite file locked by another writer past its busy timeout is said the same way."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from eventsourcing.persistence import OperationalError

from runledger.application import bootstrap as bootstrapping
from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import RETRY_AFTER_S
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.application.store.url import StoreConfig, store_config
from tests.conftest import drop_pg_url, new_pg_url
from tests.support.api_support import Shard, bearer, serving, shard_run
from tests.support.console_support import Console, csrf_of, live_server
from tests.support.proxy import Proxy

BOUND_S = 3.0  # RUNLEDGER_STORE_TIMEOUT_S=1 and the client's 2 s of slack
WITHIN_S = BOUND_S + 9.0  # generous: the machine is busy, and a request may wait its pool too
API = ("/admin/events/runs", "/admin/runners", "/metrics")
CONSOLE = ("/runs", "/runners")


@dataclass
class Served:
    proxy: Proxy
    client: httpx.Client
    admin: dict[str, str]

    def get(self, path: str) -> httpx.Response:
        headers = self.admin if not path.startswith(CONSOLE) else {}
        return self.client.get(path, headers=headers, follow_redirects=False)


@pytest.fixture
def served(pg_admin: str) -> Iterator[Served]:
    url = new_pg_url(pg_admin)
    init_store(Settings(database_url=url))
    proxy = Proxy(("127.0.0.1", 5432))
    proxied = url.replace("@127.0.0.1:5432/", f"@127.0.0.1:{proxy.port}/")
    settings = Settings(database_url=proxied, connect_timeout_s=1, store_timeout_s=1.0)
    try:
        with bootstrap(settings, registry=Registry()) as rl:
            secret = rl.tokens.issue("root", "admin", by="test").secret
            with live_server(create_app(rl)) as base, httpx.Client(base_url=base) as client:
                form = client.get("/signin").text
                signed = client.post(
                    "/signin", data={"token": secret, "csrf": csrf_of(form), "next": "/runs"}
                )
                assert signed.status_code in (200, 303), signed.text
                yield Served(proxy, client, bearer(secret))
    finally:
        proxy.close()
        drop_pg_url(pg_admin, url)


def said(caplog: pytest.LogCaptureFixture, event: str) -> int:
    return sum(1 for r in caplog.records if getattr(r, "event", None) == event)


def wait_for(done: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g}s for {what}")
        time.sleep(0.2)


def all_answer(served: Served) -> bool:
    return all(served.get(path).status_code == 200 for path in (*API, *CONSOLE))


def refused_within_the_bound(served: Served, path: str) -> None:
    started = time.monotonic()
    answer = served.get(path)
    took = time.monotonic() - started
    assert answer.status_code == 503, (path, answer.status_code, answer.text)
    assert took < WITHIN_S, (path, took)
    assert answer.headers["Retry-After"].isdigit(), answer.headers
    assert "Traceback" not in answer.text and "psycopg" not in answer.text, answer.text
    if path.startswith(CONSOLE):
        assert answer.headers["content-type"].startswith("text/html"), answer.headers
        assert "cannot be reached" in answer.text and "tries again" in answer.text, answer.text
    elif path != "/metrics":
        assert "cannot reach" in answer.json()["detail"], answer.text


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("trouble", ["cut", "black_hole"])
def test_a_store_away_is_a_503_on_every_route_within_the_bound_then_200_after_the_mend(
    served: Served, trouble: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="runledger.telemetry")
    assert all_answer(served)
    getattr(served.proxy, trouble)()
    for path in (*API, *CONSOLE, API[0]):  # the last one once the outage is known
        refused_within_the_bound(served, path)
    served.proxy.mend()
    wait_for(lambda: all_answer(served), "every route to answer again")
    assert all_answer(served)
    assert said(caplog, "store.unreachable") == 1, caplog.text
    assert said(caplog, "store.reachable") == 1, caplog.text
    assert "Traceback" not in caplog.text, caplog.text


def _library() -> Exception:
    """The library's wrapper, as its datastore raises it: from psycopg's error."""
    try:
        raise OperationalError("server closed the connection unexpectedly") from (
            psycopg.OperationalError("server closed the connection unexpectedly")
        )
    except OperationalError as error:
        return error


def _sqlite() -> Exception:
    error = sqlite3.OperationalError("unable to open database file")
    error.sqlite_errorcode = 14  # SQLITE_CANTOPEN, as the driver sets it
    return error


@pytest.mark.parametrize(
    "error",
    [
        psycopg.OperationalError("consuming input failed: server closed the connection"),
        _library(),
        _sqlite(),
    ],
    ids=["psycopg", "library", "sqlite"],
)
def test_a_drivers_error_under_a_read_is_a_503_in_one_sentence_not_a_500(
    rl: Runledger, error: Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the drills saw: a driver's error raised in the read hook, which no service had put
    in words, answered 500 with its traceback."""
    api = serving(rl)
    console = Console(api)
    console.sign_in("viewer")

    def fails() -> int:
        raise error

    csrf = console.form_token("/runs")
    monkeypatch.setattr(rl.projector, "catch_up", fails)
    answer = api.get("/admin/events/runs", "viewer")
    assert answer.status_code == 503 and answer.headers["Retry-After"].isdigit(), answer.text
    assert answer.json()["detail"].startswith(("cannot reach the store", "cannot open the store"))
    page = console.get("/runs")
    assert page.status_code == 503 and page.headers["Retry-After"].isdigit(), page.text
    assert "cannot be reached" in page.text and "Traceback" not in page.text
    assert page.headers["Refresh"] == page.headers["Retry-After"]
    token = api.secrets["viewer"]
    posted = console.post("/signin", {"token": token, "csrf": csrf, "next": "/runs"})
    assert posted.status_code == 503 and "cannot be reached" in posted.text, posted.text
    assert "Refresh" not in posted.headers  # a form is not sent again by itself


@pytest.mark.slow
def test_an_sqlite_file_locked_past_its_busy_timeout_is_said_once_when_it_starts_and_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's writer holds the file's write lock past the busy timeout (1 s here,
    30 s as shipped): every write is a 503 with Retry-After; reads go on (WAL), and do not end
    the outage; the lock let go, writes answer again, and the log says it once each way."""
    caplog.set_level(logging.INFO, logger="runledger.telemetry")
    path = tmp_path / "ledger.sqlite3"
    url = f"sqlite:///{path}"
    init_store(Settings(database_url=url))
    monkeypatch.setattr(bootstrapping, "store_config", short_busy_timeout)
    registry = Registry()
    Shard().install(registry)
    with bootstrap(Settings(database_url=url), registry=registry) as rl:
        api = serving(rl)
        with api.client:
            assert api.post("/admin/events/runs", "operator", json=shard_run(1)).status_code == 201
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            for _ in range(3):
                answer = api.post("/admin/events/runs", "operator", json=shard_run(1))
                assert answer.status_code == 503, answer.text
                assert answer.headers["Retry-After"] == str(RETRY_AFTER_S), answer.headers
                assert "stayed locked by another process" in answer.json()["detail"]
                assert api.get("/admin/events/runs", "viewer").status_code == 200
            other.rollback()
            other.close()
            assert api.post("/admin/events/runs", "operator", json=shard_run(1)).status_code == 201
            assert len(api.get("/admin/events/runs", "viewer").json()["items"]) == 2
    assert said(caplog, "store.unreachable") == 1, caplog.text
    assert said(caplog, "store.reachable") == 1, caplog.text
    assert "Traceback" not in caplog.text, caplog.text


def short_busy_timeout(*args: Any, **kwargs: Any) -> StoreConfig:
    config = store_config(*args, **kwargs)
    return replace(config, env={**config.env, "SQLITE_LOCK_TIMEOUT": "1"})

"""Issue 29: libpq's parameters pass through RUNLEDGER_DATABASE_URL to every connection the store
makes, and every connection carries runledger's bounds (store/bounds.py), which the URL's own
parameters may tighten or loosen."""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.errors import ConfigError
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.postgres import PostgresBackend

pytestmark = pytest.mark.postgres


def opened(url: str, **settings: float) -> Runledger:
    return bootstrap(Settings.model_validate({"database_url": url, **settings}), Registry())


def pooled(rl: Runledger) -> dict[str, str]:
    """The libpq parameters of a connection from the store's own pool, and its server settings."""
    backend = rl.backend
    assert isinstance(backend, PostgresBackend)
    with backend.datastore.get_connection() as conn:
        found = dict(conn.info.get_parameters())
        timeout: Any = conn.execute("SHOW statement_timeout").fetchone()
        jit: Any = conn.execute("SHOW jit").fetchone()
    return {**found, "statement_timeout": str(timeout["statement_timeout"]), "jit": jit["jit"]}


@pytest.fixture
def url(pg_url: str) -> str:
    return pg_url


def test_libpq_parameters_in_the_url_reach_the_server(url: str, pg_admin: str) -> None:
    name = f"rl-{uuid.uuid4().hex[:12]}"
    with opened(f"{url}&sslmode=disable&application_name={name}") as rl:
        rl.projector.catch_up()  # a read through the pool
        with psycopg.connect(pg_admin, autocommit=True) as admin:
            seen = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name]
            ).fetchone()
        assert seen is not None and seen[0] >= 1
        assert pooled(rl)["sslmode"] == "disable"


def test_every_pooled_connection_is_bounded(url: str) -> None:
    with opened(url, store_timeout_s=4.0, connect_timeout_s=3) as rl:
        found = pooled(rl)
    assert found["statement_timeout"] == "4s"
    assert found["keepalives"] == "1" and found["keepalives_idle"] == "2"
    assert found["tcp_user_timeout"] == "4000" and found["connect_timeout"] == "3"


def test_the_urls_own_parameters_win_over_runledgers_bounds(url: str) -> None:
    given = f"{url}&options=-c%20statement_timeout%3D2500&keepalives_idle=7"
    with opened(given, store_timeout_s=4.0) as rl:
        found = pooled(rl)
    assert found["statement_timeout"] == "2500ms" and found["keepalives_idle"] == "7"


def test_the_servers_jit_is_off_unless_the_url_turns_it_on(url: str) -> None:
    with opened(url) as rl:
        assert pooled(rl)["jit"] == "off"
    with opened(f"{url}&options=-c%20jit%3Don") as rl:
        assert pooled(rl)["jit"] == "on"


def test_a_statement_past_the_bound_is_cancelled_by_the_server(url: str) -> None:
    with opened(url, store_timeout_s=1.0) as rl:
        started = time.monotonic()
        with pytest.raises(Exception, match="statement timeout"):
            rl.backend.select("SELECT pg_sleep(5)", [])
        assert time.monotonic() - started < 4.5
        rl.projector.catch_up()  # still good: the server said no, the connection did not vanish


def test_no_bound_leaves_the_servers_own(url: str) -> None:
    with opened(url, store_timeout_s=0) as rl:
        assert pooled(rl)["statement_timeout"] == "0"


def test_an_unknown_parameter_is_refused_before_any_connection(url: str) -> None:
    with pytest.raises(ConfigError, match=r"unknown query parameters \('sslmod'\)"):
        opened(f"{url}&sslmod=require")

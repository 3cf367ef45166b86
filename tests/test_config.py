from __future__ import annotations

import socket
from pathlib import Path

import pytest

from application.bootstrap import bootstrap, init_store
from application.errors import ConfigError, NotInitialised, StoreUnavailable
from application.settings import Settings, store_config


def test_the_default_store_is_an_sqlite_file_beside_the_caller() -> None:
    config = store_config(Settings.from_env({}).database_url)
    assert config.engine == "sqlite"
    assert config.env["SQLITE_DBNAME"] == "./runledger.sqlite3"


def test_a_postgres_url_maps_onto_the_library_settings() -> None:
    config = store_config("postgresql://alice:s%40cret@db.example:6543/ledger?schema=live")
    assert config.env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    assert config.env["POSTGRES_HOST"] == "db.example"
    assert config.env["POSTGRES_PORT"] == "6543"
    assert config.env["POSTGRES_USER"] == "alice"
    assert config.env["POSTGRES_PASSWORD"] == "s@cret"
    assert config.env["POSTGRES_DBNAME"] == "ledger"
    assert config.env["POSTGRES_SCHEMA"] == "live"


def test_a_postgres_url_without_a_password_still_sets_one() -> None:
    config = store_config("postgresql://postgres@127.0.0.1/test")
    assert config.env["POSTGRES_PASSWORD"] == ""


@pytest.mark.parametrize(
    "url",
    [
        "mysql://root@localhost/db",
        "not a url",
        "sqlite://",
        "sqlite:///:memory:",
        "postgresql://localhost",
        "postgresql://u@h:99999/db",
        "postgresql://u@h/db?schema=Robert'); DROP TABLE x;--",
    ],
)
def test_a_malformed_url_is_refused_in_one_sentence(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        store_config(url)
    assert "\n" not in str(raised.value)


def test_a_bad_number_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="EVENT_REVERT_MAX_ATTEMPTS"):
        Settings.from_env({"EVENT_REVERT_MAX_ATTEMPTS": "three"})
    with pytest.raises(ConfigError, match="EVENT_CLEANUP_RUN_BATCH"):
        Settings.from_env({"EVENT_CLEANUP_RUN_BATCH": "0"})


def test_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {"EVENT_REVERT_MAX_ATTEMPTS": "5", "EVENT_CLEANUP_GROUPS_PER_RUN": "7"}
    )
    assert settings.max_revert_attempts == 5
    assert settings.cleanup_groups_per_run == 7


def test_a_store_that_was_never_initialised_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    with pytest.raises(NotInitialised, match="runledger init"):
        bootstrap(Settings(database_url=url))


def test_init_is_idempotent(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'x.sqlite3'}",
        module_settings={"RUNLEDGER_SANDBOX_PATH": str(tmp_path / "world.sqlite3")},
    )
    init_store(settings)
    init_store(settings)
    with bootstrap(settings) as rl:
        positions = rl.projector.positions()
        assert positions == {"runs": 0, "resources": 0, "steps": 0, "run_log": 0}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_is_down_gives_one_clear_sentence() -> None:
    url = f"postgresql://postgres@127.0.0.1:{_free_port()}/test"
    with pytest.raises(StoreUnavailable) as raised:
        bootstrap(Settings(database_url=url))
    message = str(raised.value)
    assert message.startswith("cannot reach the PostgreSQL at 127.0.0.1:")
    assert "\n" not in message


@pytest.mark.postgres
def test_a_postgres_store_that_was_never_initialised_says_so(pg_admin: str) -> None:
    from tests.conftest import drop_pg_url, new_pg_url

    url = new_pg_url(pg_admin)
    try:
        with pytest.raises(NotInitialised, match="runledger init"):
            bootstrap(Settings(database_url=url))
    finally:
        drop_pg_url(pg_admin, url)

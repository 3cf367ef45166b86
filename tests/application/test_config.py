from __future__ import annotations

import socket
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.cli.environment import listing
from runledger.application.errors import ConfigError, NotInitialised, StoreUnavailable
from runledger.application.settings import (
    ALIASES,
    CORE_SETTINGS,
    ENV_NAMES,
    Settings,
    module_scope,
    refused_setting,
)
from runledger.application.store.url import store_config
from tests.support.reading import EVERY_VIEW


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


def test_the_wait_for_a_postgres_connection_is_the_librarys_own_setting() -> None:
    settings = Settings.from_env({"POSTGRES_CONNECT_TIMEOUT": "2"})
    url = "postgresql://u@h/db"
    assert store_config(url, settings.connect_timeout_s).env["POSTGRES_CONNECT_TIMEOUT"] == "2"
    assert store_config(url).env["POSTGRES_CONNECT_TIMEOUT"] == "5"
    with pytest.raises(ConfigError, match="POSTGRES_CONNECT_TIMEOUT"):
        Settings.from_env({"POSTGRES_CONNECT_TIMEOUT": "0"})


def test_a_module_has_ten_seconds_to_load_unless_the_environment_says_otherwise() -> None:
    assert Settings.from_env({}).module_load_budget_s == 10.0
    given = Settings.from_env({"RUNLEDGER_MODULE_LOAD_BUDGET_S": "1.5"})
    assert given.module_load_budget_s == 1.5
    assert "RUNLEDGER_MODULE_LOAD_BUDGET_S" in CORE_SETTINGS  # no module is given it


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
        "postgresql://[::1/db",
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
        assert positions == dict.fromkeys(EVERY_VIEW, 0)


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


@pytest.mark.parametrize(
    "schema",
    ["abc%0A", "abc%0a", "abc%0D", "abc%00", "%0Aabc", "abc ", "ABC", "1abc", "a" * 64, ""],
)
def test_a_schema_name_must_be_a_plain_name_from_its_first_character_to_its_last(
    schema: str,
) -> None:
    with pytest.raises(ConfigError) as raised:
        store_config(f"postgresql://u@h/db?schema={schema}")
    message = str(raised.value)
    assert "RUNLEDGER_DATABASE_URL" in message and "schema" in message
    assert "\n" not in message and "\x00" not in message


@pytest.mark.parametrize(
    "schema", ["information_schema", "pg_catalog", "pg_toast", "pg_temp_3", "pg_anything"]
)
def test_a_system_schema_is_refused(schema: str) -> None:
    with pytest.raises(ConfigError, match=rf"RUNLEDGER_DATABASE_URL.*{schema}.*system schema"):
        store_config(f"postgresql://u@h/db?schema={schema}")


def test_a_url_with_two_schema_values_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"RUNLEDGER_DATABASE_URL.*more than one schema"):
        store_config("postgresql://u@h/db?schema=live&schema=other")
    with pytest.raises(ConfigError, match="more than one schema"):
        store_config("postgresql://u@h/db?schema=live&schema=live")


@pytest.mark.parametrize(
    "query",
    [
        "schema=live&sslmod=disable",
        "search_path=live",
        "Schema=live",
        "schema",
        "host=elsewhere",  # the URL names its host, user and database itself, once
        "dbname=other",
        "password=x",
        "service=prod",
        "sslmode=require&sslmode=disable",
        "application_name=a%00b",
        "options=" + "x" * 1001,
    ],
)
def test_a_url_with_an_unknown_query_parameter_is_refused(query: str) -> None:
    with pytest.raises(ConfigError) as raised:
        store_config(f"postgresql://u@h/db?{query}")
    message = str(raised.value)
    assert message.startswith("RUNLEDGER_DATABASE_URL") and "\n" not in message
    assert "\x00" not in message


def test_an_unknown_query_parameter_is_named_in_the_refusal() -> None:
    with pytest.raises(ConfigError, match=r"unknown query parameters \('sslmod'\)"):
        store_config("postgresql://u@h/db?sslmod=require")


def test_libpq_parameters_pass_through_the_url() -> None:
    config = store_config(
        "postgresql://u@h/db?schema=live&sslmode=verify-full&sslrootcert=/etc/ca.pem"
        "&application_name=runledger%20east&target_session_attrs=read-write"
    )
    assert config.schema == "live"
    assert config.libpq == {
        "sslmode": "verify-full",
        "sslrootcert": "/etc/ca.pem",
        "application_name": "runledger east",
        "target_session_attrs": "read-write",
    }


def test_an_sqlite_url_takes_no_query_parameters() -> None:
    with pytest.raises(ConfigError, match="RUNLEDGER_DATABASE_URL"):
        store_config("sqlite:///./x.sqlite3?mode=rwc")


def test_a_plain_schema_name_is_accepted() -> None:
    assert store_config("postgresql://u@h/db?schema=live_2").schema == "live_2"
    assert store_config("postgresql://u@h/db").schema == ""


def test_a_refused_url_never_shows_its_password() -> None:
    with pytest.raises(ConfigError) as raised:
        store_config("postgresql://alice:s3cret@h/db?schema=live&sslmode=off&nosuch=1")
    assert "s3cret" not in str(raised.value) and "***" in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        store_config("postgresql://alice@h/db?sslpassword=k3y&nosuch=1")
    assert "k3y" not in str(raised.value) and "***" in str(raised.value)


# A valid value other than the default for every setting that has an old name, and what it reads as.
SAMPLES: dict[str, tuple[str, object]] = {
    "max_revert_attempts": ("5", 5),
    "cleanup_run_batch": ("7", 7),
    "cleanup_groups_per_run": ("9", 9),
    "cleanup_budget_s": ("2.5", 2.5),
    "cleanup_lanes": ("2", 2),
    "wake_s": ("0.5", 0.5),
    "advance_run_batch": ("11", 11),
    "steps_per_run_tick": ("3", 3),
    "steps_per_tick": ("13", 13),
    "lease_max_s": ("600", 600),
    "retry_delays_s": ("1,2", (1.0, 2.0)),
    "retry_jitter": ("0.5", 0.5),
    "runner_gone_s": ("30", 30),
    "shutdown_grace_s": ("4", 4.0),
    "connect_timeout_s": ("7", 7),
}


def test_every_setting_has_a_runledger_name_and_every_old_name_a_sample() -> None:
    assert all(name.startswith("RUNLEDGER_") for name in ENV_NAMES.values())
    assert set(ALIASES) == set(SAMPLES)
    assert set(ALIASES) <= set(ENV_NAMES)


@pytest.mark.parametrize("field", sorted(SAMPLES))
@pytest.mark.parametrize("which", ["new", "old"])
def test_a_setting_is_read_under_its_runledger_name_and_its_old_one(field: str, which: str) -> None:
    text, value = SAMPLES[field]
    name = ENV_NAMES[field] if which == "new" else ALIASES[field]
    assert getattr(Settings.from_env({name: text}), field) == value
    assert getattr(Settings.from_env({}), field) != value  # the sample is not the default


@pytest.mark.parametrize("field", sorted(SAMPLES))
def test_both_names_with_one_value_are_that_value(field: str) -> None:
    text, value = SAMPLES[field]
    given = {ENV_NAMES[field]: text, ALIASES[field]: text}
    assert getattr(Settings.from_env(given), field) == value


@pytest.mark.parametrize("field", sorted(SAMPLES))
def test_both_names_with_different_values_are_refused_naming_both(field: str) -> None:
    given = {ENV_NAMES[field]: SAMPLES[field][0], ALIASES[field]: "1"}
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(given)
    message = str(raised.value)
    assert ENV_NAMES[field] in message and ALIASES[field] in message
    assert "set only" in message and "\n" not in message


@pytest.mark.parametrize("field", sorted(SAMPLES))
def test_a_bad_value_names_the_variable_it_was_given_under(field: str) -> None:
    for name in (ENV_NAMES[field], ALIASES[field]):
        with pytest.raises(ConfigError, match=rf"^{name} is invalid"):
            Settings.from_env({name: "-1e999x"})


def test_an_empty_new_name_leaves_the_old_one_in_force() -> None:
    settings = Settings.from_env({"RUNLEDGER_WAKE_S": "", "EVENT_WAKE_S": "0.5"})
    assert settings.wake_s == 0.5


def test_no_module_is_given_a_setting_under_either_name() -> None:
    for field, alias in ALIASES.items():
        assert refused_setting("cleanup", ENV_NAMES[field]) is not None
        assert refused_setting("cleanup", alias) is not None
    environ = {"EVENT_WAKE_S": "0.5", "RUNLEDGER_WAKE_S": "0.5", "OTHER": "x"}
    settings = Settings.from_env(environ)
    assert module_scope("wake", frozenset({"EVENT_WAKE_S", "OTHER"}), {}, environ) == {"OTHER": "x"}
    assert "EVENT_WAKE_S" not in settings.module_environ


def test_help_lists_each_setting_under_its_runledger_name_with_its_old_one() -> None:
    shown = dict(listing())
    for field, name in ENV_NAMES.items():
        [line] = [line for line in shown if line.startswith(f"{name} ")]
        alias = ALIASES.get(field)
        assert (f"old name {alias}" in line) if alias else ("old name" not in line)

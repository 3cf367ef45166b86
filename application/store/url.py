"""Where the ledger lives: RUNLEDGER_DATABASE_URL read as the eventsourcing library's settings,
with what they cannot say (the URL's libpq parameters, the bound of a round trip)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from runledger.application.errors import ConfigError
from runledger.domain.text import safe_text

# fullmatch, never "$": "$" also matches before a final newline ("abc\n" would pass).
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_SYSTEM_SCHEMAS = ("information_schema", "pg_catalog", "pg_toast")
_SSLPASSWORD = re.compile(r"([?&]sslpassword=)[^&#]*")
# libpq's connection parameters a URL may pass on: TLS, the session, and the bounds an operator
# may want tighter than runledger's (store/bounds.py). Not host, port, dbname, user or password,
# which the URL says itself, nor service or passfile, which would say them elsewhere.
LIBPQ = frozenset(
    {
        "application_name",
        "channel_binding",
        "connect_timeout",
        "gssencmode",
        "keepalives",
        "keepalives_count",
        "keepalives_idle",
        "keepalives_interval",
        "krbsrvname",
        "options",
        "require_auth",
        "ssl_max_protocol_version",
        "ssl_min_protocol_version",
        "sslcert",
        "sslcrl",
        "sslcrldir",
        "sslkey",
        "sslmode",
        "sslnegotiation",
        "sslpassword",
        "sslrootcert",
        "sslsni",
        "target_session_attrs",
        "tcp_user_timeout",
    }
)


@dataclass(frozen=True)
class StoreConfig:
    """Where the ledger lives, as the library's own settings, with what they cannot say: the
    URL's libpq parameters and the bound of a round trip (store/bounds.py)."""

    engine: Literal["sqlite", "postgres"]
    env: dict[str, str]
    schema: str
    display: str
    libpq: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 0.0
    """The longest a round trip to PostgreSQL may take; 0: no bound (`runledger init`)."""


def store_config(url: str, connect_timeout_s: int = 5, timeout_s: float = 0.0) -> StoreConfig:
    """Map RUNLEDGER_DATABASE_URL onto the eventsourcing library's settings."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigError("RUNLEDGER_DATABASE_URL is not a URL") from None
    url = _without_password(url, parts.password)
    if parts.scheme == "sqlite":
        path = unquote(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else ""
        if not path or ":memory:" in path:
            raise ConfigError(
                f"RUNLEDGER_DATABASE_URL {url!r} names no file: use sqlite:///path/to/file"
            )
        if "?" in url or "#" in url or not path.isprintable():
            raise ConfigError(
                f"RUNLEDGER_DATABASE_URL {url!r} must name a plain file, with no query "
                "parameters or control characters: use sqlite:///path/to/file"
            )
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": path,
            "SQLITE_LOCK_TIMEOUT": "30",
        }
        return StoreConfig("sqlite", env, "", f"SQLite file {path}")
    if parts.scheme in ("postgresql", "postgres"):
        dbname = parts.path.lstrip("/")
        if not parts.hostname or not dbname:
            raise ConfigError(
                f"RUNLEDGER_DATABASE_URL {url!r} needs a host and a database: "
                "postgresql://user@host:port/db"
            )
        schema, libpq = _query(url, parts.query)
        try:
            port = str(parts.port or 5432)
        except ValueError:
            raise ConfigError(f"RUNLEDGER_DATABASE_URL {url!r} has a bad port") from None
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": dbname,
            "POSTGRES_HOST": parts.hostname,
            "POSTGRES_PORT": port,
            "POSTGRES_USER": unquote(parts.username or "postgres"),
            "POSTGRES_PASSWORD": unquote(parts.password or ""),
            "POSTGRES_CONNECT_TIMEOUT": str(connect_timeout_s),
            "POSTGRES_SCHEMA": schema,
        }
        where = f"PostgreSQL at {parts.hostname}:{port}/{dbname}"
        return StoreConfig("postgres", env, schema, where, libpq, timeout_s)
    raise ConfigError(
        f"RUNLEDGER_DATABASE_URL {url!r} is not understood: use sqlite:///path "
        "or postgresql://user@host:port/db"
    )


def _without_password(url: str, password: str | None) -> str:
    """The URL as a message may show it: a refusal must not print the credential (nor the
    passphrase of a client key, which libpq takes as sslpassword=)."""
    url = _SSLPASSWORD.sub(r"\1***", url)
    return url.replace(f":{password}@", ":***@", 1) if password else url


def _query(url: str, query: str) -> tuple[str, dict[str, str]]:
    """The schema a PostgreSQL URL names, and the libpq parameters it passes on to every
    connection (sslmode=require, application_name=...); any other name is refused."""
    given = parse_qsl(query, keep_blank_values=True)
    unknown = sorted({name for name, _ in given if name != "schema" and name not in LIBPQ})
    if unknown:
        raise ConfigError(
            f"RUNLEDGER_DATABASE_URL {url!r} has unknown query parameters "
            f"({', '.join(safe_text(repr(n), 80) for n in unknown)}): schema= and libpq's "
            f"connection parameters are understood ({', '.join(sorted(LIBPQ))})"
        )
    libpq: dict[str, str] = {}
    for name, value in given:
        if name in libpq:
            raise ConfigError(f"RUNLEDGER_DATABASE_URL {url!r} names {name} more than once")
        if name != "schema":
            libpq[name] = _libpq_value(name, value)
    return _schema([value for name, value in given if name == "schema"], url), libpq


def _libpq_value(name: str, value: str) -> str:
    if not value.isprintable() or len(value) > 1_000:
        raise ConfigError(
            f"RUNLEDGER_DATABASE_URL parameter {name} must be printable text of at most "
            "1000 characters"
        )
    return value


def _schema(values: list[str], url: str) -> str:
    """The one schema a PostgreSQL URL may name: a plain name, not one of the server's own."""
    if len(values) > 1:
        raise ConfigError(f"RUNLEDGER_DATABASE_URL {url!r} names more than one schema")
    if not values:
        return ""
    schema = values[0]
    if not _SCHEMA.fullmatch(schema):
        raise ConfigError(
            f"RUNLEDGER_DATABASE_URL schema {schema!r} is not a plain lower-case SQL name "
            "(a letter or _, then up to 62 letters, digits or _)"
        )
    if schema in _SYSTEM_SCHEMAS or schema.startswith("pg_"):
        raise ConfigError(
            f"RUNLEDGER_DATABASE_URL schema {schema!r} is a system schema of PostgreSQL: "
            "name a schema of your own"
        )
    return schema

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import psycopg
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import InfrastructureFactory, Recording, Transcoder
from eventsourcing.postgres import PostgresDatastore, PostgresFactory
from eventsourcing.sqlite import SQLiteDatastore
from eventsourcing.utils import Environment
from psycopg.sql import SQL, Composable, Identifier

from runledger.application.errors import (
    STORE_ERRORS,
    NotInitialised,
    RunledgerError,
    StoreReadOnly,
    StoreUnavailable,
    store_error,
)
from runledger.application.store import bounds, pg_insert, riding, saving, sqlite_file
from runledger.application.store.hearing import Hearing
from runledger.application.store.outage import Outage
from runledger.application.store.transcoding import FastJSONTranscoder
from runledger.application.store.url import StoreConfig
from runledger.domain.topics import register_old_topics
from runledger.projections.backend import Backend, Cursor
from runledger.projections.fresh_reads import written
from runledger.projections.postgres import PostgresBackend
from runledger.projections.schema import missing_columns, missing_indexes
from runledger.projections.sqlite import SQLiteBackend

A = TypeVar("A", bound=Aggregate)

INIT_LOCK = 0x726C  # "rl": the advisory lock class of `runledger init`, keyed on the schema


class LedgerApp(Application[UUID]):
    """The event store of every ledger entry, run and run-log line."""

    name = "Ledger"

    def __init__(
        self, env: Mapping[str, str] | None = None, config: StoreConfig | None = None
    ) -> None:
        register_old_topics()  # before any event is read: older stores name classes by them
        self.config = config
        self.outage: Outage | None = None
        """What the PostgreSQL pool found of the store's reach (store/bounds.py)."""
        self.on_close: list[Callable[[], object]] = []
        """Told before the store closes: what holds a connection of its own (a listener, the
        projector's role) lets it go first."""
        super().__init__(env)
        self.hearing = _hearing(self)
        """What this process hears of the store (hearing.py)."""
        self.on_close.append(self.hearing.close)

    def close(self) -> None:
        for close in reversed(self.on_close):
            close()
        self.on_close.clear()
        super().close()

    def construct_factory(self, env: Environment) -> InfrastructureFactory:
        """The library's factory, its PostgreSQL pool bounded before the recorder opens it."""
        factory = super().construct_factory(env)
        if self.config is not None and isinstance(factory, PostgresFactory):
            self.outage = bounds.bind(factory.datastore, self.config)
        return factory

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """The library's save, less its per-object runtime Protocol checks (store/saving.py),
        carrying the calling request's key record when it rides (store/riding.py). The request's
        next read catches up again, to see it (projections/fresh_reads.py)."""
        try:
            return riding.with_rider(lambda found: saving.save(self, found, kwargs), objs)
        finally:
            written()

    def construct_transcoder(self) -> Transcoder:
        transcoder = FastJSONTranscoder()
        self.register_transcodings(transcoder)
        return transcoder


def open_app(config: StoreConfig) -> tuple[LedgerApp, Backend]:
    """Construct the application on the configured, initialised store and prove it answers.

    An SQLite file that cannot be written is opened read-only, so that reading still works.
    """
    env = {**config.env, "CREATE_TABLE": "n"}
    if config.engine == "sqlite":
        sqlite_file.refuse_no_file(config)
        env["SQLITE_DBNAME"] = sqlite_file.sqlite_name(config.env["SQLITE_DBNAME"])
    app: LedgerApp | None = None
    try:
        _probe(config)
        app = LedgerApp(env=env, config=config)
        _binary_inserts(app)
        backend = _backend(app)
        sqlite_file.refuse_damaged(backend, config)
        missing = backend.missing_tables()
        older = [] if missing else missing_columns(backend) + missing_indexes(backend)
        if not missing and isinstance(backend, PostgresBackend):
            source = pg_insert.use_function(_recorder(app))
            app.hearing.ends_said = source is not None and pg_insert.says_ends(
                source, backend.schema
            )
    except STORE_ERRORS as error:
        if app is not None:
            app.close()
        raise _opening(error, config) from None
    if missing:
        app.close()
        raise NotInitialised(
            f"the {config.display} has no runledger tables ({', '.join(missing)}); "
            "run `runledger init` first"
        )
    if older:
        app.close()
        raise NotInitialised(
            f"the {config.display} was made by an earlier runledger: its tables lack "
            f"{', '.join(older)}; run `runledger init` to add them"
        )
    return app, backend


@contextmanager
def initialising(config: StoreConfig) -> Iterator[tuple[LedgerApp, Backend, Cursor]]:
    """The store opened to create its tables, one process at a time, a lock held throughout.
    The caller creates the projections' tables in the cursor given; it commits on success.

    PostgreSQL: an advisory lock keyed on the schema, around the schema, the library's tables
    (two CREATE TYPEs racing collide in pg_type) and ours. SQLite: every table in one
    BEGIN IMMEDIATE transaction, which waits its turn for the file's write lock.
    """
    env = {**config.env, "CREATE_TABLE": "y" if config.engine == "postgres" else "n"}
    path = config.env.get("SQLITE_DBNAME")
    if path is not None and sqlite_file.sqlite_name(path) != path:
        raise StoreReadOnly(
            f"the store is read-only: the {config.display} or its folder "
            "cannot be written, so its tables cannot be created"
        )
    try:
        with _init_lock(config):
            app = LedgerApp(env=env, config=config)
            try:
                _binary_inserts(app)
                backend = _backend(app)
                sqlite_file.refuse_damaged(backend, config)
                with _creating(app, backend) as cursor:
                    yield app, backend, cursor
            finally:
                app.close()
    except STORE_ERRORS as error:
        raise _opening(error, config) from None


@contextmanager
def _init_lock(config: StoreConfig) -> Iterator[None]:
    if config.engine != "postgres":
        with sqlite_file.file_lock(Path(config.env["SQLITE_DBNAME"])):
            yield
        return
    with _connect(config) as conn:
        conn.execute("SET lock_timeout = '120s'")  # an init stuck elsewhere: say so, not hang
        conn.execute(
            "SELECT pg_advisory_lock(%s, hashtext(%s))", [INIT_LOCK, config.schema or "public"]
        )
        if config.schema:
            conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(config.schema)))
        yield  # closing the connection releases the lock, whatever happened


@contextmanager
def _creating(app: LedgerApp, backend: Backend) -> Iterator[Cursor]:
    if isinstance(backend, SQLiteBackend):
        with backend.exclusive() as cursor:
            for statement in _recorder(app).create_table_statements:
                cursor.execute(statement)
            yield cursor
        return
    with backend.transaction(commit=True) as cursor:
        cursor.execute(pg_insert.create_statement(_recorder(app)))
        yield cursor


def _opening(error: BaseException, config: StoreConfig) -> RunledgerError:
    return store_error(error, config.display, config.env.get("SQLITE_DBNAME"))


def _probe(config: StoreConfig) -> None:
    """Ask the server directly first: the pool would only say it waited, not why."""
    if config.engine == "postgres":
        _connect(config).close()


def own_connection(config: StoreConfig) -> psycopg.Connection[Any]:
    """A connection of its own, outside the pool, in autocommit: for what a process holds for
    its whole life (a LISTEN, a session's advisory lock)."""
    return _connect(config)


def _connect(config: StoreConfig) -> psycopg.Connection[Any]:
    env = config.env
    return psycopg.connect(
        host=env["POSTGRES_HOST"],
        port=env["POSTGRES_PORT"],
        dbname=env["POSTGRES_DBNAME"],
        user=env["POSTGRES_USER"],
        password=env["POSTGRES_PASSWORD"],
        autocommit=True,
        **bounds.libpq_params(config),
    )


def _recorder(app: LedgerApp) -> Any:
    return app.recorder


def _hearing(app: LedgerApp) -> Hearing:
    config = app.config
    if config is None or config.engine != "postgres":
        return Hearing(None, "", "")
    return Hearing(
        lambda: own_connection(config), config.schema or "public", _recorder(app).channel_name
    )


def _binary_inserts(app: LedgerApp) -> None:
    """Send the stored-event composites of each PostgreSQL insert in binary.

    eventsourcing 9.5 inserts ``unnest(%s::stored_event[])``: psycopg then dumps every composite
    and its bytea as text, escaping through regular expressions. With ``%b`` it uses the binary
    dumper the library already registered, which escapes nothing: each event's insert costs less
    (scripts/MEASUREMENTS.md, "Binary composites in the PostgreSQL insert").
    If a later library version writes the statement differently, this changes nothing.
    """
    recorder = _recorder(app)
    statement = getattr(recorder, "insert_events_statement", None)
    if isinstance(recorder.datastore, PostgresDatastore) and isinstance(statement, Composable):
        text = statement.as_string(None)
        if "unnest(%s::" in text:
            recorder.insert_events_statement = SQL(text.replace("unnest(%s::", "unnest(%b::"))


def _backend(app: LedgerApp) -> Backend:
    recorder = _recorder(app)
    datastore = recorder.datastore
    if isinstance(datastore, PostgresDatastore):
        return PostgresBackend(datastore, recorder.events_table_name)
    if isinstance(datastore, SQLiteDatastore):
        return SQLiteBackend(datastore, recorder.events_table_name)
    raise StoreUnavailable(f"runledger does not support the {type(datastore).__name__} store")


class Streams:
    """Loads many aggregates in one query: the sweep works groups, not single entries."""

    def __init__(self, app: LedgerApp, backend: Backend) -> None:
        self.app = app
        self.backend = backend

    def load(self, cls: type[A], ids: Iterable[UUID]) -> dict[UUID, A]:
        wanted = sorted(set(ids))
        if not wanted:  # a run's page with nothing kept asked the store for nothing
            return {}
        loaded: dict[UUID, Any] = {}
        for stored in self.backend.select_streams(wanted):
            event: Any = self.app.mapper.to_domain_event(stored)
            loaded[event.originator_id] = event.mutate(loaded.get(event.originator_id))
        for found in loaded.values():
            if not isinstance(found, cls):
                raise TypeError(f"{found.id} is a {type(found).__name__}, not a {cls.__name__}")
        return loaded

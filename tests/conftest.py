from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import freezegun
import psycopg
import pytest
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from scripts.pg import PG_ADMIN as PG_ADMIN
from scripts.pg import drop_pg_url as drop_pg_url
from scripts.pg import new_pg_url as new_pg_url
from tests.support.forked_cli import ForkedCli
from tests.support.pg_stores import PgStores, ended
from tests.support.playing import (
    BUILD,
    GAME,
    GAME_SPAWN,
    NO_BACKOFF,
    SPAWN,
    START,
    ZONE,
    Clock,
    runledgers,
)
from tests.support.proxy import Proxy
from tests.support.world import World

# pytest times tests by _pytest.timing's own perf_counter: a frozen one made every test take
# ~1.8e9 s in --durations. Left alone, it keeps real time (nothing else reads it).
freezegun.configure(extend_ignore_list=["_pytest.timing"])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tier first (tests that start processes or take seconds), each file's order
    kept: with ``--maxschedchunk=1`` a worker takes one test at a time, so the longest start
    early and the short ones fill in around them, rather than a 40-second test starting last
    while two workers stand idle."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# PG_ADMIN, new_pg_url and drop_pg_url are scripts.pg's (the drills make their schemas there
# too); the tests import them from here.
REQUIRE_PG = os.environ.get("RUNLEDGER_REQUIRE_POSTGRES") == "1"


def _pg_available() -> str | None:
    try:
        with psycopg.connect(PG_ADMIN, connect_timeout=3):
            return None
    except psycopg.Error as error:
        return str(error).splitlines()[0]


@pytest.fixture(scope="session")
def pg_admin() -> str:
    problem = _pg_available()
    if problem:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required here but not reachable: {problem}")
        pytest.skip(f"no PostgreSQL server: {problem}")
    return PG_ADMIN


@pytest.fixture(scope="session")
def pg_stores(pg_admin: str) -> Iterator[PgStores]:
    stores = PgStores(pg_admin)
    yield stores
    stores.close()


@contextmanager
def a_pg_store(request: pytest.FixtureRequest) -> Iterator[str]:
    """An initialised, empty PostgreSQL store in a private schema, emptied for another test
    afterwards when nothing of this one can still reach it (tests/support/pg_stores.py)."""
    stores: PgStores = request.getfixturevalue("pg_stores")
    before = set(threading.enumerate())
    url = stores.take()
    yield url
    spawns = request.node.get_closest_marker("slow") is not None
    stores.give_back(url, reusable=not spawns and ended(before))


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """An initialised, empty PostgreSQL store in a private schema."""
    with a_pg_store(request) as url:
        yield url


@pytest.fixture
def proxied(request: pytest.FixtureRequest) -> Iterator[tuple[str, Proxy]]:
    """An initialised PostgreSQL store reached through a TCP proxy the test owns (cut it, or
    black-hole it): the store's URL through the proxy, and the proxy."""
    with a_pg_store(request) as url:
        proxy = Proxy(("127.0.0.1", 5432))
        yield url.replace("@127.0.0.1:5432/", f"@127.0.0.1:{proxy.port}/"), proxy
        proxy.close()


@pytest.fixture
def pg_rl(pg_url: str) -> Iterator[Runledger]:
    """A runledger with no modules on ``pg_url``."""
    rl = bootstrap(Settings(database_url=pg_url), Registry())
    yield rl
    rl.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An initialised, empty store: an SQLite file, or a private PostgreSQL schema."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
        init_store(Settings(database_url=url))
        yield url
        return
    with a_pg_store(request) as url:
        yield url


@pytest.fixture
def registry() -> Registry:
    return Registry()


Factory = Callable[..., Runledger]
Opener = Callable[..., Runledger]


@pytest.fixture
def make_runledger(store_url: str, registry: Registry) -> Iterator[Factory]:
    """Build runledgers on the test's store; every one is closed at the end."""
    opened: list[Runledger] = []

    def make(**settings: object) -> Runledger:
        given = {"database_url": store_url} | NO_BACKOFF | settings
        rl = bootstrap(Settings.model_validate(given), registry)
        opened.append(rl)
        return rl

    yield make
    for rl in opened:
        rl.close()


@pytest.fixture
def rl(make_runledger: Factory) -> Runledger:
    return make_runledger()


@pytest.fixture
def clock() -> Iterator[Clock]:
    """The one clock a test's runledgers read; the test moves it. freezegun holds datetime.now
    to it too, so that a runledger on the default clock (``rl``, ``make_runledger``) reads it."""
    # The pool's own timers keep real time: closing it waits for its workers by them.
    with freeze_time(START, ignore=["psycopg_pool"]) as frozen:
        assert isinstance(frozen, FrozenDateTimeFactory)
        yield Clock(START, frozen)


@pytest.fixture
def game(registry: Registry) -> World:
    """The World as the module game, with its spawn action and weather lease registered."""
    game = World(name=GAME)
    game.install(registry, GAME_SPAWN)
    return game


@pytest.fixture
def world(registry: Registry) -> World:
    """The World, with its spawn, build and zone actions and its weather lease registered."""
    world = World()
    world.install(registry, SPAWN, BUILD, ZONE)
    return world


@pytest.fixture
def opened(store_url: str, registry: Registry, clock: Clock, game: World) -> Iterator[Opener]:
    """Open runledgers on the test's store, all on the test's clock."""
    with runledgers(store_url, registry, clock) as open_one:
        yield open_one


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkedCli]:
    """``runledger`` commands, each in a fresh process forked from one that imported the CLI
    once (a command's second of imports, paid once a module)."""
    forked = ForkedCli(tmp_path_factory.mktemp("cli"))
    yield forked
    forked.close()


Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(cli_server: ForkedCli) -> Cli:
    """``run_cli``'s call, on the module's forked CLI: ``cli("runs", cwd=..., env=...)``."""
    return cli_server.run

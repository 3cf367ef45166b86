"""The PostgreSQL store's connection pool is psycopg_pool's, used as shipped and declared in
pyproject.toml: nothing of its own is swapped (it once made the pool last-in-first-out by
replacing its private deque; scripts/MEASUREMENTS.md, "The pool as shipped", says what that was
worth). One thread's statements go round its idle connections, as the pool hands them out;
threads at once get connections of their own."""

from __future__ import annotations

import threading
import tomllib
from collections import deque
from importlib.metadata import version
from pathlib import Path

import psycopg_pool
import pytest
from packaging.requirements import Requirement

from runledger.application.runledger import Runledger
from runledger.projections.postgres import PostgresBackend

PID = "SELECT pg_backend_pid() AS pid"
PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def pid(rl: Runledger) -> int:
    return int(rl.queries.backend.select(PID, [])[0]["pid"])


def test_psycopg_pool_is_declared_and_the_installed_one_is_in_its_range() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    [pool] = [Requirement(d) for d in declared if Requirement(d).name == "psycopg-pool"]
    assert pool.specifier.contains(version("psycopg-pool")), (pool, version("psycopg-pool"))


@pytest.mark.postgres
def test_the_pool_is_psycopg_pools_own_and_hands_its_connections_out_in_turn(
    pg_rl: Runledger,
) -> None:
    backend = pg_rl.queries.backend
    assert isinstance(backend, PostgresBackend)
    pool = backend.datastore.pool
    assert isinstance(pool, psycopg_pool.ConnectionPool)
    assert type(pool._pool) is deque  # its own idle connections, as it made them
    held = [pool.getconn(), pool.getconn()]  # it opens one at start, more as they are asked
    for conn in held:
        pool.putconn(conn)
    idle = pool.get_stats()["pool_available"]
    assert idle >= 2
    assert len({pid(pg_rl) for _ in range(2 * idle)}) >= 2  # in turn, not one kept warm


@pytest.mark.postgres
def test_threads_at_once_get_connections_of_their_own(pg_rl: Runledger) -> None:
    backend = pg_rl.queries.backend
    inside = threading.Barrier(3, timeout=10)
    seen: list[int] = []

    def hold() -> None:
        with backend.transaction(commit=False) as cursor:
            cursor.execute(PID)
            seen.append(int(cursor.fetchone()["pid"]))
            inside.wait()  # all three hold a connection at once

    threads = [threading.Thread(target=hold) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert len(set(seen)) == 3

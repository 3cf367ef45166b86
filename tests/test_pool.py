"""The PostgreSQL store's connection pool (store/pooling.py): one thread's statements one after
another go to one connection, whose prepared statements and plans are warm; threads at once
still get connections of their own."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from runledger.application.bootstrap import Runledger, bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.conftest import drop_pg_url, new_pg_url

pytestmark = pytest.mark.postgres
PID = "SELECT pg_backend_pid() AS pid"


@pytest.fixture
def url(pg_admin: str) -> Iterator[str]:
    url = new_pg_url(pg_admin)
    init_store(Settings(database_url=url))
    yield url
    drop_pg_url(pg_admin, url)


@pytest.fixture
def rl(url: str) -> Iterator[Runledger]:
    rl = bootstrap(Settings(database_url=url), Registry())
    yield rl
    rl.close()


def pid(rl: Runledger) -> int:
    return int(rl.queries.backend.select(PID, [])[0]["pid"])


def test_one_thread_reads_on_one_connection(rl: Runledger) -> None:
    rl.app.save()  # a save and a read between the two reads compared
    rl.projector.catch_up()
    assert len({pid(rl) for _ in range(6)}) == 1


def test_threads_at_once_get_connections_of_their_own(rl: Runledger) -> None:
    backend = rl.queries.backend
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
    assert pid(rl) in seen  # and afterwards one of them serves again

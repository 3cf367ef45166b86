"""The PostgreSQL store's connection pool (store/pooling.py): one thread's statements one after
another go to one connection, whose prepared statements and plans are warm; threads at once
still get connections of their own."""

from __future__ import annotations

import threading

import pytest

from runledger.application.runledger import Runledger

pytestmark = pytest.mark.postgres
PID = "SELECT pg_backend_pid() AS pid"


def pid(rl: Runledger) -> int:
    return int(rl.queries.backend.select(PID, [])[0]["pid"])


def test_one_thread_reads_on_one_connection(pg_rl: Runledger) -> None:
    pg_rl.app.save()  # a save and a read between the two reads compared
    pg_rl.projector.catch_up()
    assert len({pid(pg_rl) for _ in range(6)}) == 1


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
    assert pid(pg_rl) in seen  # and afterwards one of them serves again

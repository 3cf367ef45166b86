"""A request reads at one moment: its reads (the token's, the page's, its rows') share one
catch-up, made again after anything it saves; reads at once share a catch-up begun after they
all arrived (projections/fresh_reads.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.fresh_reads import shared
from tests.application.test_one_projector import counted
from tests.support.api_support import Api, Shard, serving, shard_run


@pytest.fixture
def one(tmp_path: Path) -> Iterator[tuple[Api, list[int]]]:
    """An app over an SQLite file (the process projects for itself: each catch-up is counted)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ledger.sqlite3'}")
    init_store(settings)
    registry = Registry()
    Shard().install(registry)
    rl: Runledger = bootstrap(settings, registry)
    api = serving(rl)
    with rl, api.client:
        yield api, counted(rl)


def test_a_read_asks_the_store_once_whatever_it_reads(one: tuple[Api, list[int]]) -> None:
    api, calls = one
    run = api.start(shard_run(2))
    for path in (
        "/admin/events/runs?limit=50",
        f"/admin/events/runs/{run}",
        f"/admin/events/runs/{run}/log",
        "/readyz",
    ):
        before = len(calls)
        answer = api.get(path, "viewer")
        assert answer.status_code == 200, (path, answer.text)
        assert len(calls) - before == 1, path


def test_a_request_that_saves_catches_up_again_and_answers_with_what_it_saved(
    one: tuple[Api, list[int]],
) -> None:
    api, calls = one
    before = len(calls)
    answer = api.post("/admin/events/runs", "operator", json=shard_run(2, name="seen at once"))
    assert answer.status_code == 201, answer.text
    assert answer.json()["run"]["name"] == "seen at once"
    assert len(calls) - before >= 2  # its token's read, then again after the save


def test_reads_at_once_share_a_call_begun_after_they_all_arrived() -> None:
    log: list[tuple[str, int]] = []
    first = threading.Event()

    def catch_up() -> int:
        n = sum(1 for kind, _ in log if kind == "begin") + 1
        log.append(("begin", n))
        if n == 1:
            first.wait(10)  # the others arrive while the first call is under way
        time.sleep(0.05)
        return n

    fresh = shared(catch_up)
    answers: dict[int, int] = {}

    def read(i: int) -> None:
        log.append(("arrive", i))
        answers[i] = fresh()

    readers = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    readers[0].start()
    while not log or log[-1] != ("begin", 1):
        time.sleep(0.01)
    for reader in readers[1:]:
        reader.start()
    deadline = time.monotonic() + 10  # every reader arrives while the first call is under way
    while sum(1 for kind, _ in log if kind == "arrive") < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    first.set()
    for reader in readers:
        reader.join(10)
    calls = [n for kind, n in log if kind == "begin"]
    assert len(answers) == 8
    assert len(calls) < 8, log  # shared: eight reads did not make eight calls
    for i, answer in answers.items():
        # Never an answer from a call begun before the reader arrived.
        assert log.index(("begin", answer)) > log.index(("arrive", i)), log

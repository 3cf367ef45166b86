"""A frozen projector (SIGSTOP, a suspended VM) keeps its role, as its session lives on: a read
in another process waits its bound for it, then catches the views up itself and answers fresh,
saying so once in the log rather than failing every read until the projector is resumed."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from tests.application.test_one_projector import counted, holders, projecting
from tests.support.playing import makes, phase, spec
from tests.support.world import World

pytestmark = pytest.mark.postgres
WAIT_S = 1.0


@pytest.fixture
def frozen(pg_url: str, tmp_path: Path) -> Iterator[int]:
    """A child process that took the projector's role, then was frozen: its pid."""
    child = projecting(pg_url, tmp_path)
    try:
        os.kill(child.pid, signal.SIGSTOP)
        yield child.pid
    finally:
        os.kill(child.pid, signal.SIGCONT)
        child.kill()
        child.wait(30)


def started_and_read(rl: Runledger, name: str) -> float:
    """Start a run, then read it: the seconds the read took."""
    run_id: UUID = rl.runs.start(spec(phase("p", makes("s", f"{name}-c")), name=name))
    began = time.monotonic()
    found = rl.queries.run(run_id, datetime.now(UTC), 3)
    took = time.monotonic() - began
    assert found is not None and found.run_id == run_id  # fresh: the new run is there
    return took


def test_a_read_past_its_wait_for_a_frozen_projector_catches_up_itself(
    frozen: int,
    pg_url: str,
    pg_admin: str,
    registry: Registry,
    world: World,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="runledger.projector")
    [theirs] = holders(pg_admin, pg_url)
    settings = Settings(database_url=pg_url, projection_wait_s=WAIT_S)
    with bootstrap(settings, registry) as rl:
        applied = counted(rl)
        took = started_and_read(rl, "first")
        assert WAIT_S <= took < WAIT_S + 3, took  # the bound, then its own catch-up
        assert applied  # it caught up itself, and answered
        for n in range(2):
            started_and_read(rl, f"later{n}")
        assert holders(pg_admin, pg_url) == [theirs]  # the frozen one still holds the role
    said = [r for r in caplog.records if "frozen or hung" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]

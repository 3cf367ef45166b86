"""One projector per PostgreSQL store (projections/role.py, following.py): the first process to
read takes the role and projects; the others never apply an event, they wait for it and still
see their own writes; when the projector's process dies another takes over within seconds."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

import runledger
from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from runledger.projections.projector import Projector
from runledger.projections.role import ROLE_LOCK
from tests.support.recorded import AT, entry

pytestmark = pytest.mark.postgres
Boot = Callable[..., Runledger]


@pytest.fixture
def boot(pg_url: str) -> Iterator[Boot]:
    opened: list[Runledger] = []

    def make(**settings: object) -> Runledger:
        rl = bootstrap(Settings.model_validate({"database_url": pg_url} | settings), Registry())
        opened.append(rl)
        return rl

    yield make
    for rl in opened:
        rl.close()


def counted(rl: Runledger) -> list[int]:
    """Every catch-up this runledger's projector makes, counted."""
    calls: list[int] = []
    catch_up = rl.projector.catch_up

    def count(*args: object, **kwargs: object) -> int:
        calls.append(1)
        return catch_up(*args, **kwargs)

    rl.projector.catch_up = count  # type: ignore[method-assign]
    return calls


def reads_entry(rl: Runledger, made: Resource) -> bool:
    rows = rl.queries.retryable_entries(made.run_id, AT, 3, overdue_leases_only=False)
    return [r.entry_id for r in rows] == [made.id]


def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)


def schema_of(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def holders(pg_admin: str, url: str) -> list[int]:
    """The server pids holding the projector's role on ``url``'s schema."""
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.classid = %s AND l.objid = hashtext(%s)::oid",
            [ROLE_LOCK, schema_of(url)],
        ).fetchall()
    return [int(r[0]) for r in rows]


def test_only_the_first_reader_projects_and_another_sees_its_own_write_by_waiting(
    boot: Boot, pg_url: str, pg_admin: str
) -> None:
    first, second = boot(), boot()
    first_applied, second_applied = counted(first), counted(second)
    first.queries.candidate_runs(AT, 3, 10)  # the first read: no one projects, it takes the role
    assert len(holders(pg_admin, pg_url)) == 1
    for n in range(3):
        made = entry(f"c{n}")
        second.app.save(made)
        assert reads_entry(second, made)  # its own write, at once: it waited for the projector
    assert second_applied == [] and first_applied
    assert len(holders(pg_admin, pg_url)) == 1


def test_a_reader_that_listens_is_woken_by_the_projectors_word_rather_than_looking_again(
    boot: Boot,
) -> None:
    first, second = boot(), boot()
    first.queries.candidate_runs(AT, 3, 10)  # the first read: it takes the role
    catch_up = first.projector.catch_up

    def slow(*args: object, **kwargs: object) -> int:  # a projector with a page to work through
        time.sleep(0.3)
        return catch_up(*args, **kwargs)

    first.projector.catch_up = slow  # type: ignore[method-assign]
    second.app.hearing.heard()  # a runner's wake: the process listens
    listener = second.app.hearing.listener()
    assert listener is not None and listener.listening.wait(10)
    looks: list[int] = []
    projector = second.projector
    assert isinstance(projector, Projector)
    reached = projector.reached

    def look() -> int:
        looks.append(1)
        return reached()

    projector.reached = look  # type: ignore[method-assign]
    for n in range(2):
        looks.clear()
        made = entry(f"c{n}")
        second.app.save(made)
        assert reads_entry(second, made)
        # Looking every 5 ms, doubling to 50, read the positions ~9 times in those 0.3 s.
        assert 1 <= len(looks) <= 4, looks


def test_a_read_whose_projector_does_not_move_catches_up_itself_past_its_wait_and_says_so_once(
    boot: Boot, pg_url: str, pg_admin: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A projector that holds the role and does nothing: a process paused, or hung.
    caplog.set_level(logging.WARNING, logger="runledger.projector")
    with psycopg.connect(pg_admin, autocommit=True) as hung:
        hung.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [ROLE_LOCK, schema_of(pg_url)])
        hung_pid = hung.info.backend_pid
        reader = boot(projection_wait_s=0.3)
        applied = counted(reader)
        for n in range(3):
            made = entry(f"c{n}")
            reader.app.save(made)
            assert reads_entry(reader, made)  # fresh, not stale and not a 503
        assert applied and hung_pid in holders(pg_admin, pg_url)
        said = [r for r in caplog.records if "frozen or hung" in r.getMessage()]
        assert len(said) == 1  # once, not once per read
    # The hung one gone, the reader takes the role itself: a process alone never waits on nobody.
    until(lambda: hung_pid not in holders(pg_admin, pg_url))
    made = entry("c9")
    reader.app.save(made)
    assert reads_entry(reader, made)


def test_reads_that_are_not_the_projectors_leave_applying_to_it(
    boot: Boot, pg_url: str, pg_admin: str
) -> None:
    """The fleet's projections and the webhooks' watch read through the read hook: in a process
    that is not the projector they wait for it, and never apply an event themselves."""
    first, second = boot(), boot()
    first.queries.candidate_runs(AT, 3, 10)  # the first read: it takes the role
    second_applied = counted(second)
    second.app.save(entry("c1"))
    head = second.projector.head()
    assert {p.position for p in second.fleet_answers.projections()} == {head}
    second.app.save(entry("c2"))
    watcher = second.sender("w2").watcher
    assert watcher is not None and watcher.stuck() == []
    assert second.projector.behind() == 0
    assert second_applied == []


PROJECTOR = """
import sys, time
from datetime import UTC, datetime
from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings

rl = bootstrap(Settings(database_url=sys.argv[1]), Registry())
rl.queries.candidate_runs(datetime.now(UTC), 3, 10)
print("projecting", flush=True)
time.sleep(600)
"""


def projecting(pg_url: str, tmp_path: Path) -> subprocess.Popen[str]:
    """A process of this tree's runledger that has taken the store's projector role."""
    script = tmp_path / "projector.py"
    script.write_text(textwrap.dedent(PROJECTOR))
    here = str(Path(runledger.__file__).resolve().parents[1])  # this tree's runledger
    env = {**os.environ, "PYTHONPATH": here}
    child = subprocess.Popen(
        [sys.executable, str(script), pg_url], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "projecting"
    return child


def test_when_the_projectors_process_is_killed_another_takes_over_and_the_views_catch_up(
    boot: Boot, pg_url: str, pg_admin: str, tmp_path: Path
) -> None:
    projector = projecting(pg_url, tmp_path)
    try:
        [theirs] = holders(pg_admin, pg_url)
        reader = boot()
        applied = counted(reader)
        made = entry("c1")
        reader.app.save(made)
        assert reads_entry(reader, made) and applied == []  # the other process projected it
        os.kill(projector.pid, signal.SIGKILL)
        projector.wait(30)
        later = entry("c2")
        reader.app.save(later)  # nothing reads: the reader's projecting thread takes over
        until(lambda: holders(pg_admin, pg_url) not in ([], [theirs]))
        until(lambda: reader.projector.behind() == 0)
        assert applied and reads_entry(reader, later)
    finally:
        if projector.poll() is None:
            projector.kill()
            projector.wait(30)

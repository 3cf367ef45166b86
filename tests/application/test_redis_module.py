"""The Redis module against a real server: Redis's own expiries, somebody else's writes, keys
deleted by hand, and a server restart mid-run.

The server at 127.0.0.1:6379 is shared: every test works under a prefix of its own and deletes
its keys afterwards. The restart test starts (and ends, by pid) a private server of its own.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import redis
from eventsourcing.persistence import PersistenceError

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.builtin_modules.redis.world import BOOKKEEPING_TTL_S, RedisWorld
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.queries import EntryRow

SHARED = "redis://127.0.0.1:6379/0"
REQUIRE_REDIS = os.environ.get("RUNLEDGER_REQUIRE_REDIS") == "1"


def _unreachable(url: str) -> str | None:
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        return str(error)
    return None


@pytest.fixture(scope="module")
def shared() -> str:
    problem = _unreachable(SHARED)
    if problem:
        if REQUIRE_REDIS:
            pytest.fail(f"Redis is required here (RUNLEDGER_REQUIRE_REDIS=1): {problem}")
        pytest.skip(f"no Redis server at 127.0.0.1:6379: {problem}")
    return SHARED


@pytest.fixture
def prefix() -> str:
    return f"rltest:{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def client(shared: str, prefix: str) -> Iterator[redis.Redis]:
    """A client of the shared server; every key under the test's prefix is deleted at the end."""
    conn = redis.Redis.from_url(shared, decode_responses=True)
    yield conn
    leftovers = list(conn.scan_iter(match=f"{prefix}*"))
    if leftovers:
        conn.delete(*leftovers)
    conn.close()


Open = Callable[[str], Runledger]


@pytest.fixture
def open_rl(tmp_path: Path, prefix: str) -> Iterator[Open]:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    opened: list[Runledger] = []

    def make(redis_url: str) -> Runledger:
        rl = bootstrap(
            Settings(
                database_url=url,
                builtin_modules="redis",
                module_settings={
                    "RUNLEDGER_REDIS_URL": redis_url,
                    "RUNLEDGER_REDIS_PREFIX": prefix,
                },
            )
        )
        opened.append(rl)
        (status,) = rl.modules
        assert status.status == "loaded", status.reason
        return rl

    yield make
    for rl in opened:
        rl.close()


@pytest.fixture
def rl(open_rl: Open, shared: str, client: redis.Redis) -> Runledger:
    return open_rl(shared)


def held_run(rl: Runledger, *steps: dict[str, Any], then: Sequence[dict[str, Any]] = ()) -> UUID:
    """Start a run whose first phase waits for a person, and dispatch its steps."""
    phases: list[dict[str, Any]] = [{"id": "p1", "advance": "manual", "steps": list(steps)}]
    if then:
        phases.append({"id": "p2", "steps": list(then)})
    run = rl.runs.start({"name": "redis run", "phases": phases})
    rl.runner("w1").tick()
    return run


def finish(rl: Runledger, run: UUID, ticks: int = 2) -> None:
    rl.runs.advance(run, "tester")
    for _ in range(ticks):
        rl.runner("w1").tick()


def named(rl: Runledger, run: UUID) -> dict[str, EntryRow]:
    rl.projector.catch_up()
    return {e.ref: e for e in rl.queries.entries(run) if e.kind != "@step"}


def cleanup_status(rl: Runledger, run: UUID) -> str:
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert row is not None
    return row.cleanup_status


def log_kinds(rl: Runledger, run: UUID) -> list[str]:
    rl.projector.catch_up()
    return [line.kind for line in rl.queries.log(run)]


def wait_until(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def keys(conn: redis.Redis, prefix: str) -> set[str]:
    return set(conn.scan_iter(match=f"{prefix}*"))


def things(conn: redis.Redis, prefix: str) -> set[str]:
    """What is in the world under the prefix, without the module's records of its keys (which
    must each expire on their own)."""
    world = RedisWorld(conn, prefix)
    kept = {name for name in keys(conn, prefix) if world.is_bookkeeping(name)}
    assert all(0 < conn.ttl(name) <= BOOKKEEPING_TTL_S for name in kept), kept
    return keys(conn, prefix) - kept


def spawn(count: int, step: str = "crows") -> dict[str, Any]:
    return {"id": step, "action": "redis.spawn", "params": {"count": count}}


def zone(name: str, duration_s: float, step: str = "zone") -> dict[str, Any]:
    return {"id": step, "action": "redis.zone", "params": {"name": name, "duration_s": duration_s}}


# --- Redis's own expiry ---------------------------------------------------------------------------


def test_a_zone_redis_expires_reaches_the_ledger_as_expired_not_orphaned(
    rl: Runledger, client: redis.Redis, prefix: str
) -> None:
    run = held_run(rl, zone("fair", 1.0))
    ref = f"{prefix}zone:fair"
    assert 0 < client.pttl(ref) <= 1000
    assert wait_until(lambda: named(rl, run)[ref].status == "expired", 6.0)
    assert not client.exists(ref)
    summary = rl.reconciler.reconcile_module("redis")
    assert (summary.asked, summary.orphaned) == (0, 0)
    assert named(rl, run)[ref].status == "expired"
    assert log_kinds(rl, run).count("resource.expired") == 1
    assert "resource.orphaned" not in log_kinds(rl, run)
    finish(rl, run)
    assert cleanup_status(rl, run) == "complete"


def test_after_a_run_whose_zone_expired_nothing_of_it_is_left_in_redis(
    rl: Runledger, client: redis.Redis, prefix: str
) -> None:
    run = held_run(rl, zone("fair", 0.5))
    assert wait_until(lambda: named(rl, run)[f"{prefix}zone:fair"].status == "expired", 6.0)
    finish(rl, run)
    assert cleanup_status(rl, run) == "complete"
    assert keys(client, prefix) == set()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_one_failed_expiry_report_does_not_stop_later_expiries_reaching_the_ledger(
    rl: Runledger, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = rl.projector.catch_up
    blips: list[str] = []

    def catch_up() -> int:
        if threading.current_thread().name == "redis-watch" and not blips:
            blips.append("once")
            raise PersistenceError("the store did not answer (injected)")
        return real()

    monkeypatch.setattr(rl.projector, "catch_up", catch_up)
    run = held_run(rl, zone("first", 0.3), zone("second", 1.0, step="zone2"))
    assert wait_until(lambda: blips == ["once"], 6.0)
    second = f"{prefix}zone:second"
    assert wait_until(lambda: named(rl, run)[second].status == "expired", 4.0)


# --- somebody else's value ------------------------------------------------------------------------


def door(prefix: str, value: str) -> dict[str, Any]:
    return {
        "id": "door",
        "action": "core.lease",
        "params": {
            "lease": "redis.string",
            "target": f"{prefix}door",
            "value": value,
            "duration_s": 600,
        },
    }


def test_a_leased_key_another_client_changed_is_drifted_and_keeps_their_value(
    rl: Runledger, client: redis.Redis, prefix: str
) -> None:
    client.set(f"{prefix}door", "shut")
    run = held_run(rl, door(prefix, "open"))
    assert client.get(f"{prefix}door") == "open"
    client.set(f"{prefix}door", "welded")
    finish(rl, run, ticks=3)
    (entry,) = named(rl, run).values()
    assert (entry.status, entry.attempts, entry.drift_current) == ("drifted", 1, "welded")
    assert client.get(f"{prefix}door") == "welded"
    assert cleanup_status(rl, run) == "incomplete"
    assert "cleanup.drifted" in log_kinds(rl, run)


@pytest.mark.parametrize("before", ["shut", None])
def test_a_leased_key_nobody_touched_gets_its_old_value_back_or_is_removed(
    rl: Runledger, client: redis.Redis, prefix: str, before: str | None
) -> None:
    if before is not None:
        client.set(f"{prefix}door", before)
    run = held_run(rl, door(prefix, "open"))
    assert client.get(f"{prefix}door") == "open"
    finish(rl, run)
    assert {e.status for e in named(rl, run).values()} == {"reverted"}
    assert client.get(f"{prefix}door") == before
    assert cleanup_status(rl, run) == "complete"


def test_a_restore_repeated_after_its_runner_died_finds_the_old_value_and_has_given_it_back(
    rl: Runledger, client: redis.Redis, prefix: str
) -> None:
    client.set(f"{prefix}door", "shut")
    run = held_run(rl, door(prefix, "open"))
    client.set(f"{prefix}door", "shut")  # the first restore, whose verdict was never saved
    finish(rl, run)
    assert {e.status for e in named(rl, run).values()} == {"reverted"}
    assert client.get(f"{prefix}door") == "shut"
    assert cleanup_status(rl, run) == "complete"


# --- deleted by hand ------------------------------------------------------------------------------


def test_keys_deleted_by_hand_before_their_until_are_reconciled_as_orphaned(
    rl: Runledger, client: redis.Redis, prefix: str
) -> None:
    run = held_run(rl, spawn(2), zone("camp", 600))
    first, second = sorted(r for r in named(rl, run) if ":creature:" in r)
    camp = f"{prefix}zone:camp"
    assert client.exists(first, second, camp) == 3
    client.delete(first, camp)
    summary = rl.reconciler.reconcile_module("redis")
    assert (summary.asked, summary.in_force, summary.orphaned, summary.expired) == (3, 1, 2, 0)
    entries = named(rl, run)
    assert {r: e.status for r, e in entries.items()} == {
        first: "orphaned",
        camp: "orphaned",
        second: "live",
    }
    assert log_kinds(rl, run).count("resource.orphaned") == 2
    finish(rl, run)
    assert {e.status for e in named(rl, run).values()} == {"reverted"}
    assert cleanup_status(rl, run) == "complete"
    assert things(client, prefix) == set()


def test_everything_a_run_made_in_redis_is_given_back_once_it_ends(
    rl: Runledger, client: redis.Redis, prefix: str
) -> None:
    run = held_run(rl, spawn(3), zone("market", 600), door(prefix, "open"))
    assert len(things(client, prefix)) == 5
    finish(rl, run)
    assert {e.status for e in named(rl, run).values()} == {"reverted"}
    assert cleanup_status(rl, run) == "complete"
    assert things(client, prefix) == set()
    world = RedisWorld(client, prefix)
    assert all(world.fenced(f"{run}:{step}") for step in ("crows", "zone", "door"))


# --- a restart mid-run ----------------------------------------------------------------------------


class OwnRedis:
    """A private redis-server on a spare port, without persistence, that a test may restart."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not wait_until(lambda: _unreachable(self.url) is None, 10.0):
            raise RuntimeError(f"redis-server on port {self.port} did not answer")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    server = OwnRedis(tmp_path)
    try:
        server.start()
    except (FileNotFoundError, RuntimeError) as error:
        server.stop()
        if REQUIRE_REDIS:
            pytest.fail(f"cannot start a private redis-server: {error}")
        pytest.skip(f"cannot start a private redis-server: {error}")
    yield server
    server.stop()


def test_a_redis_restart_mid_run_makes_the_module_reconcile_and_the_rest_is_given_back(
    open_rl: Open, own_redis: OwnRedis, prefix: str
) -> None:
    rl = open_rl(own_redis.url)
    conn = redis.Redis.from_url(own_redis.url, decode_responses=True)
    run = held_run(rl, spawn(2), then=[spawn(1, "king")])
    crows = set(named(rl, run))
    assert len(crows) == 2 and keys(conn, prefix) >= crows
    own_redis.restart()  # no persistence: the server comes back empty
    assert wait_until(lambda: {e.status for e in named(rl, run).values()} == {"orphaned"}, 15.0), {
        r: e.status for r, e in named(rl, run).items()
    }
    assert log_kinds(rl, run).count("resource.orphaned") == 2
    finish(rl, run, ticks=3)
    entries = named(rl, run)
    assert len(entries) == 3 and {e.status for e in entries.values()} == {"reverted"}
    assert cleanup_status(rl, run) == "complete"
    assert things(conn, prefix) == set()
    conn.close()


# --- the world itself: keys given back are ended, applies are keyed ------------------------------


@pytest.fixture
def world(client: redis.Redis, prefix: str) -> RedisWorld:
    return RedisWorld(client, prefix)


def given_back(key: str, what: str = "made") -> dict[str, Any]:
    return {
        "ok": False,
        "retry": False,
        "error": f"{key} was given back; nothing is {what} under it",
    }


def test_a_revert_by_key_gives_back_what_it_made_and_a_late_perform_makes_nothing(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    first = world.spawn({"count": 2}, "k1")
    assert world.spawn({"count": 2}, "k1") == first
    assert len(things(client, prefix)) == 2
    assert world.revert([], "k1") == {"ok": True}
    assert things(client, prefix) == set()
    assert world.spawn({"count": 2}, "k1") == given_back("k1")
    assert world.open_zone({"name": "fair"}, "k1") == given_back("k1")
    assert things(client, prefix) == set()
    assert world.fenced("k1") and not world.fenced("k2")


def raced(world: RedisWorld, key: str) -> Any:
    """A spawn and a revert by the same key, let go at the same moment: the spawn's answer."""
    start = threading.Barrier(2)
    answers: list[Any] = []

    def perform() -> None:
        start.wait()
        answers.append(world.spawn({"count": 3}, key))

    late = threading.Thread(target=perform)
    late.start()
    start.wait()
    world.revert([], key)
    late.join(5)
    return answers[0]


def test_a_perform_racing_a_revert_by_key_leaves_nothing_whichever_comes_first(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    """Each spawn is one script: a revert lands before it (and it makes nothing) or after it
    (and finds all it made), never between its check of the fence and its writes."""
    for n in range(40):
        answer = raced(world, f"race-{n}")
        assert answer == given_back(f"race-{n}") or answer["ok"] is True, answer
        assert things(client, prefix) == set(), answer


def test_a_repeated_apply_answers_the_first_baseline_and_changes_nothing(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    door = f"{prefix}door"
    assert world.apply(door, "open", "lease-k") == {"ok": True, "baseline": None, "applied": "open"}
    assert world.apply(door, "ajar", "lease-k") == {"ok": True, "baseline": None, "applied": "open"}
    assert client.get(door) == "open"
    assert world.applied_under("lease-k") == {"target": door, "baseline": None, "applied": "open"}


def test_a_restore_by_key_with_no_baseline_puts_back_what_the_key_found_and_ends_it(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    door = f"{prefix}door"
    client.set(door, "shut")
    world.apply(door, "open", "lease-k")
    world.apply(door, "open", "lease-k")  # a retry: it would have found "open"
    assert world.restore(None, None, door, "lease-k") == {"ok": True}
    assert client.get(door) == "shut"
    assert world.apply(door, "open", "lease-k") == given_back("lease-k", "applied")
    assert client.get(door) == "shut"
    assert world.restore(None, None, door, "lease-k") == {"ok": True}  # restored before


def test_a_restore_of_a_key_that_did_not_exist_removes_it(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    door = f"{prefix}door"
    world.apply(door, "open", "lease-k")
    assert world.restore("open", "open", door, "lease-k") == {"ok": True}  # the record wins
    assert not client.exists(door)


def test_a_restore_under_a_key_that_applied_nothing_is_ok_and_ends_the_key(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    door = f"{prefix}door"
    client.set(door, "shut")
    assert world.restore(None, None, door, "never-applied") == {"ok": True}
    assert world.apply(door, "open", "never-applied") == given_back("never-applied", "applied")
    assert client.get(door) == "shut"
    assert world.applied_under("never-applied") is None


def test_a_restore_by_key_leaves_somebody_elses_value_and_says_it_drifted(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    door = f"{prefix}door"
    world.apply(door, "open", "lease-k")
    client.set(door, "welded")
    assert world.restore(None, None, door, "lease-k") == {"drifted": True, "current": "welded"}
    assert client.get(door) == "welded"
    assert world.fenced("lease-k")


def test_the_modules_records_of_keys_expire_on_their_own(
    world: RedisWorld, client: redis.Redis, prefix: str
) -> None:
    world.spawn({"count": 1}, "k1")
    world.revert([], "k2")
    world.apply(f"{prefix}door", "open", "lease-k")
    world.restore(None, None, f"{prefix}door", "lease-k")
    kept = {name for name in keys(client, prefix) if world.is_bookkeeping(name)}
    assert kept == {
        f"{prefix}made:k1",
        f"{prefix}fence:k2",
        f"{prefix}applied:lease-k",
        f"{prefix}fence:lease-k",
    }
    assert all(0 < client.ttl(name) <= BOOKKEEPING_TTL_S for name in kept)

"""The world-audit drill, short: about twenty seconds of kills, freezes, late answers, faults and
people on each store, then the world itself (the sandbox's tables, the Redis keys) held against
the ledger. ``scripts/world_audit.py`` is the full-size drill; this one is its smoke test (both run
``scripts.drills.world_audit_drill``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis

from scripts.drills.world_audit_drill import Plan, Result, run_drill

pytestmark = pytest.mark.slow

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="module")
def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        if os.environ.get("RUNLEDGER_REQUIRE_REDIS") == "1":
            pytest.fail(f"Redis is required here (RUNLEDGER_REQUIRE_REDIS=1): {error}")
        pytest.skip(f"no Redis server at 127.0.0.1:6379: {error}")
    return REDIS_URL


def assert_the_world_agrees(result: Result) -> None:
    found = result.findings
    assert found.lost_things == [], "things alive that no run shows"
    assert found.lost_values == [], "lease targets not given back, and shown nowhere"
    assert found.repeats == [], "calls beyond the claims the ledger recorded"
    assert found.stuck == [], f"runs left unsettled after {result.settled_s:.0f}s"
    assert result.died == [], "runners that died on their own"
    # Not vacuous: the storm did happen.
    assert result.tally.runs == result.plan.runs
    assert result.tally.kills == result.plan.kills
    assert result.tally.freezes == result.plan.freezes
    assert result.faults.late_calls > 0, "no call answered after its deadline"


def test_on_one_sqlite_file_shared_by_three_runners_the_world_agrees_with_the_ledger(
    redis_url: str, tmp_path: Path
) -> None:
    plan = Plan("sqlite", runs=16, runners=3, minutes=0.33, kills=4, freezes=4, seed=11)
    assert_the_world_agrees(run_drill(plan, tmp_path))


@pytest.mark.postgres
def test_on_postgres_with_three_runners_the_world_agrees_with_the_ledger(
    redis_url: str, pg_admin: str, tmp_path: Path
) -> None:
    plan = Plan(
        "postgres", runs=16, runners=3, minutes=0.33, kills=4, freezes=4, seed=12, pg_admin=pg_admin
    )
    assert_the_world_agrees(run_drill(plan, tmp_path))

"""Runs whose words a person must read right, made through the API as the tests of the
vocabulary (page-level and in the browser) need them."""

from __future__ import annotations

from uuid import UUID

from tests.support.api_support import DOWN, SHARD_SPAWN, Api, Shard, shard_run, tick
from tests.support.playing import Clock, lease_step, phase, spec, step


def kept_and_given_back(api: Api, clock: Clock, name: str = "harbour") -> UUID:
    """A run whose lease was given back at its deadline while it ran, then cancelled without
    cleanup by alice: one entry given back, two kept, nothing left."""
    body = spec(
        phase(
            "p1",
            lease_step("sky", "plaza", "storm", duration_s=30),
            step("spawn", SHARD_SPAWN, count=2),
            advance="manual",
        ),
        name=name,
    )
    run = api.start(body)
    tick(api.rl)
    clock.advance(60)
    tick(api.rl)
    answer = api.post(f"/admin/events/runs/{run}/cancel", "operator", json={"cleanup": False})
    assert answer.status_code == 200, answer.text
    found = api.run(run)["run"]
    assert (found["cleanup_status"], found["states"]) == ("complete", {"reverted": 1, "kept": 2})
    return run


def still_running(api: Api, name: str = "market") -> UUID:
    """A run waiting for a person to advance it: its two crates are in use."""
    run = api.start(shard_run(2, name=name, advance="manual"))
    tick(api.rl)
    assert api.run(run)["run"]["cleanup_status"] == "pending"
    return run


def under_way(api: Api, shard: Shard, name: str = "regatta") -> UUID:
    """A run that completed while its shard was down: its first revert failed, and the sweep
    will try again after a minute. Its cleanup is under way. The shard stays down."""
    shard.revert_answer = DOWN
    run = api.start(shard_run(2, name=name))
    tick(api.rl, 2)
    found = api.run(run)["run"]
    assert (found["status"], found["cleanup_status"]) == ("completed", "pending"), found
    return run

"""Issue 10: "open" and "retryable" are written once in the domain (``Resource.still_open``,
``Resource.retryable``); the SQL the sweep and the status read must say the same of every entry.

Entries are driven through random histories by the domain's own commands, saved, projected,
and then each is judged at several moments both ways.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from runledger.application.bootstrap import Runledger
from runledger.domain.errors import DomainError
from runledger.domain.resource import Resource
from runledger.projections.queries import _OPEN, _RETRYABLE
from tests.game import START

MAX = 3
WORKER = "w1"


def step_once(entry: Resource, rng: random.Random, at: datetime) -> None:
    """One command a ledger entry may meet, chosen at random; refused ones change nothing."""
    later = at + timedelta(seconds=rng.choice([5, 30, 120]))
    commands: list[Callable[[], None]] = [
        lambda: entry.claim_revert(WORKER, at, at + timedelta(seconds=rng.choice([1, 60])), MAX),
        lambda: entry.fail_revert(WORKER, entry.attempts, "retry", "busy", at, later),
        lambda: entry.fail_revert(WORKER, entry.attempts, "retry", "busy", at, None),
        lambda: entry.fail_revert(WORKER, entry.attempts, "terminal", "banned", at),
        lambda: entry.mark_reverted(WORKER, entry.attempts, at),
        lambda: entry.mark_drifted(WORKER, entry.attempts, "hail", "drifted", at),
        lambda: entry.orphan("gone", at),
        lambda: entry.expire("ended", at),
        lambda: entry.reset_attempts("ops", at),
        lambda: entry.keep("ops", at),
    ]
    with suppress(DomainError):  # a guard said no: the history goes on as it was
        rng.choice(commands)()


def flags(rl: Runledger, run: UUID, now: datetime) -> dict[UUID, tuple[bool, bool]]:
    """Each entry of the run as the SQL judges it at ``now``: (open, retryable)."""
    stamp = now.timestamp()
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(
            rl.backend.sql(
                f"SELECT r.entry_id, CASE WHEN {_OPEN} THEN 1 ELSE 0 END AS open_, "
                f"CASE WHEN {_RETRYABLE} THEN 1 ELSE 0 END AS retryable "
                "FROM {rl_resources} r WHERE r.run_id = %s"
            ),
            [MAX, stamp, MAX, stamp, stamp, str(run)],
        )
        return {
            UUID(row["entry_id"]): (bool(row["open_"]), bool(row["retryable"]))
            for row in cursor.fetchall()
        }


def test_the_sql_says_open_and_retryable_of_every_entry_exactly_as_the_domain_does(
    make_runledger: Callable[..., Runledger],
) -> None:
    rl = make_runledger(max_revert_attempts=MAX)
    rng = random.Random(10)
    run = rl.ledger.start_run("rules once")
    placeholder = rl.ledger.record_placeholder(run, "s", "world", "world.spawn", "k")
    named = [{"kind": "creature", "ref": f"c{i}"} for i in range(80)]
    ids = rl.ledger.supersede(placeholder, named)
    entries: dict[UUID, Any] = dict(rl.cleanup.streams.load(Resource, ids))
    at = START
    for entry in entries.values():
        for _ in range(rng.randint(0, 8)):
            at += timedelta(seconds=rng.choice([0, 1, 10, 100]))
            step_once(entry, rng, at)
    rl.app.save(*entries.values())
    rl.projector.catch_up()
    moments = [
        START,
        at - timedelta(seconds=50),
        at,
        at + timedelta(seconds=30),
        at + timedelta(seconds=200),
    ]
    seen_both = set()
    for now in moments:
        sql = flags(rl, run, now)
        for entry_id, entry in entries.items():
            domain = (entry.still_open(now, MAX), entry.retryable(now, MAX))
            assert sql[entry_id] == domain, (entry_id, now, entry.state, entry.attempts)
            seen_both.add(domain)
    # Not vacuous: every combination the rules allow came up.
    assert seen_both == {(False, False), (True, False), (True, True)}

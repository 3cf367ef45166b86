"""Issue 10: an entry's fate is written once in the domain (``runledger.domain.fate``): its
transitions, and what "unresolved", "open" and "retryable" mean. The resources view moves its
rows by the same transitions, and the SQL the sweep and the status read must say the same of
every entry.

Entries are driven through random histories by the domain's own commands, saved, projected,
and then each is judged at several moments both ways; and every combination of state, terminal,
attempts, claim and back-off is written as a row and judged both ways.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime, timedelta
from itertools import product
from typing import Any
from uuid import UUID

from runledger.application.runledger import Runledger
from runledger.domain.errors import DomainError
from runledger.domain.fate import STATES, Fate
from runledger.domain.resource import Resource
from runledger.projections.statements import _OPEN, _RETRYABLE
from runledger.projections.views.resources import ResourcesView, fate_cells, fate_of
from tests.support.playing import START, makes, start
from tests.support.world import World

MAX = 3
WORKER = "w1"
FILLED = ("claim_expires_at", "next_attempt_at", "drift_current")


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
        lambda: entry.mark_drifted(WORKER, entry.attempts, {"rain": [0.2]}, "moved", at),
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


def random_histories(rl: Runledger, seed: int) -> tuple[UUID, dict[UUID, Any], datetime]:
    """A run's entries after random histories, saved and projected; and the last moment."""
    rng = random.Random(seed)
    run = start(rl, makes("s"), name="rules once")
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
    return run, entries, at


def test_the_sql_says_open_and_retryable_of_every_entry_exactly_as_the_domain_does(
    make_runledger: Callable[..., Runledger], world: World
) -> None:
    rl = make_runledger(max_revert_attempts=MAX)
    run, entries, at = random_histories(rl, seed=10)
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


def test_every_projected_row_holds_the_fate_its_aggregate_holds(
    make_runledger: Callable[..., Runledger], world: World
) -> None:
    rl = make_runledger(max_revert_attempts=MAX)
    reached: set[str] = set()
    for seed in (11, 12, 13):
        run, entries, _ = random_histories(rl, seed)
        with rl.backend.transaction(commit=False) as cursor:
            cursor.execute(
                rl.backend.sql("SELECT * FROM {rl_resources} WHERE run_id = %s"), [str(run)]
            )
            rows = {UUID(row["entry_id"]): row for row in cursor.fetchall()}
        for entry_id, entry in entries.items():
            assert fate_of(rows[entry_id]) == entry.fate, (seed, entry_id)
            assert rows[entry_id]["version"] == entry.version
            reached |= {entry.state} | {f for f in FILLED if getattr(entry.fate, f) is not None}
    # Not vacuous: the histories reached every state a named entry can reach, and left rows
    # under a claim, waiting out a back-off and holding a drift.
    assert reached == set(STATES) - {"placeholder", "superseded"} | set(FILLED)


def every_fate(now: datetime) -> list[Fate]:
    """Every combination of state, terminal, attempts, claim and back-off, around ``now``."""
    moments = [None, now - timedelta(seconds=1), now, now + timedelta(seconds=1)]
    return [
        Fate(
            state=state,
            attempts=attempts,
            terminal=terminal,
            claim_worker=None if expires is None else WORKER,
            claim_expires_at=expires,
            next_attempt_at=next_at,
        )
        for state, terminal, attempts, expires, next_at in product(
            STATES, (False, True), range(MAX + 2), moments, moments
        )
    ]


def test_the_sql_says_open_and_retryable_of_every_combination_as_the_domain_does(
    make_runledger: Callable[..., Runledger], world: World
) -> None:
    rl = make_runledger(max_revert_attempts=MAX)
    run = start(rl, makes("s"), name="every combination")
    now = START + timedelta(hours=1)
    fates = {UUID(int=n + 1): fate for n, fate in enumerate(every_fate(now))}
    rows = [
        {
            "entry_id": str(entry_id),
            "run_id": str(run),
            "step": "s",
            "kind": "creature",
            "ref": f"c{entry_id.int}",
            "module": "world",
            "action": None,
            "idempotency_key": "k",
            "payload": None,
            "member_key": None,
            "until": None,
            "recorded_at": START.timestamp(),
            "updated_at": START.timestamp(),
            "version": 1,
        }
        | fate_cells(fate)
        for entry_id, fate in fates.items()
    ]
    with rl.backend.transaction(commit=True) as cursor:
        columns = ResourcesView.columns
        rl.backend.upsert(
            cursor,
            ResourcesView.table,
            columns,
            "entry_id",
            [[r[c] for c in columns] for r in rows],
        )
    sql = flags(rl, run, now)
    for entry_id, fate in fates.items():
        assert sql[entry_id] == (fate.still_open(now, MAX), fate.retryable(now, MAX)), fate
    # Not vacuous: every verdict the rules allow came up.
    assert set(sql.values()) == {(False, False), (True, False), (True, True)}

"""What operators do with the history — replay, rebuild and step — on SQLite and PostgreSQL.

The festival is one run scripted through the ledger, the reconciler and the cleanup against the
World, with the test's clock setting a distinct time for each act, so that every entry state
appears and "as of" can name a moment between two acts. At four such moments the festival also
reads what the live projections said then (the console's view); a replay as of that moment must
agree.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from runledger.application.errors import BadRequest, NotFound
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.history import ReplayLine
from runledger.application.services.leases import CORE_LEASE
from runledger.application.services.reconcile import EXPIRED_REASON, ORPHANED_REASON
from runledger.domain.occurrence import run_id_for
from runledger.domain.resource import LEASE_KIND, Resource
from runledger.domain.run import Run
from runledger.domain.step import Step
from runledger.projections.postgres import PostgresBackend
from runledger.projections.rebuild import rebuild
from runledger.projections.views.catalog import all_views
from tests.conftest import Cli
from tests.support.by_hand import keep
from tests.support.playing import BUILD, SPAWN, START, ZONE, Clock, makes, start
from tests.support.reading import EVERY_VIEW
from tests.support.world import World, answering

DRIFT = 'the value is now "hail" rather than what this run applied, so it was left alone'
CURSED = "the keep's foundations are cursed"
LEASE = "override:weather#plaza"


def minute(m: float) -> datetime:
    return START + timedelta(minutes=m)


MID_RUN, MID_SWEEP, AFTER_SWEEP, AFTER_KEEP = minute(25), minute(40.25), minute(45), minute(55)

VERDICTS = ("Reverted", "RevertFailed", "Drifted")
States = dict[str, tuple[str, int]]
"""Each entry's name (kind:ref) with its state and attempt count."""


@dataclass
class Festival:
    run: UUID
    ids: dict[str, UUID] = field(default_factory=dict)
    console: dict[datetime, tuple[States, str]] = field(default_factory=dict)

    def placeholder(self, step: str) -> str:
        return f"@step:{self.run}:{step}"


def what_the_console_shows(rl: Runledger, run: UUID) -> tuple[States, str]:
    rl.projector.catch_up()
    states = {e.name: (e.status, e.attempts) for e in rl.queries.entries(run)}
    return states, cleanup_status(rl, run)


def cleanup_status(rl: Runledger, run: UUID) -> str:
    rl.projector.catch_up()
    row = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert row is not None
    return row.cleanup_status


def started_by_hand(rl: Runledger, name: str) -> UUID:
    """A run as runledger 0.1 recorded one: no spec, so no steps; its entries ledgered by hand.
    A store written then holds such runs, and their history must still read."""
    run = Run.start(uuid4(), name, rl.clock())
    rl.app.save(run)
    return run.id


def completed_by_hand(rl: Runledger, run_id: UUID) -> None:
    """A run without a spec completes when its recorder says so: no phase of its says when."""
    run = rl.ledger.get_run(run_id)
    run.complete(rl.clock())
    rl.app.save(run)


def stage_festival(rl: Runledger, world: World, clock: Clock) -> Festival:
    """Every state an entry can pass through, each act at its own minute past noon.

    spawn: a placeholder superseded by c1 (reverted) and c2 (a retry failure, then kept by bob);
    zones: z1 expired by the module, z2 orphaned by a reconcile and then reverted; a lease that
    drifted; s1 failed terminally; both reset by alice's manual cleanup and then reverted; lost: a
    placeholder whose answer never came back, given back by its key.

    No run from a spec passes through all of these (a run completes only once each step's
    placeholder is superseded; a lease is ledgered beside its step's placeholder; a person keeps
    entries only by cancelling a running run), so the festival is recorded by hand, as runledger
    0.1 recorded runs: the ledger's own calls for its dispatches, the aggregates for the rest.
    """
    festival = Festival(started_by_hand(rl, "festival"))
    run, ids = festival.run, festival.ids

    def spawn_answer(resources: list[dict[str, Any]], key: str) -> Any:
        if resources:  # the sweep's first call: its group's claims are held, none judged
            clock.advance(15)
            festival.console[MID_SWEEP] = what_the_console_shows(rl, run)
            clock.advance(15)
        return {"ok": True, "failed": ["c2"]}

    world.answer("revert", SPAWN, spawn_answer)
    world.answer("revert", BUILD, answering({"ok": False, "retry": False, "error": CURSED}))
    world.answer("restore", world.lease, answering({"drifted": True, "current": "hail"}))
    world.answer("reconcile", ZONE, answering({"ok": True, "in_force": ["z1"]}))

    def dispatch(at: float, step: str, action: str, named: list[dict[str, Any]] | None) -> None:
        clock.move_to(minute(at))
        held = rl.ledger.record_placeholder(run, step, "world", action, f"{run}:{step}")
        ids[festival.placeholder(step)] = held
        if named is not None:
            clock.move_to(minute(at + 0.5))
            made = rl.ledger.supersede(held, named)
            ids.update({f"{r['kind']}:{r['ref']}": i for r, i in zip(named, made, strict=True)})

    dispatch(
        1, "spawn", SPAWN, [{"kind": "creature", "ref": "c1"}, {"kind": "creature", "ref": "c2"}]
    )
    dispatch(
        3,
        "zones",
        ZONE,
        [{"kind": "zone", "ref": "z1", "until": minute(20)}, {"kind": "zone", "ref": "z2"}],
    )
    clock.move_to(minute(5))
    lease = Resource(
        run_id=run,
        step="weather",
        kind=LEASE_KIND,
        ref="weather#plaza",
        module="world",
        action=CORE_LEASE,
        idempotency_key=f"{run}:weather",
        payload={"baseline": "clear", "applied": "storm"},
        member_key=None,
        until=minute(65),
        at=clock(),
    )
    rl.app.save(lease)
    ids[LEASE] = lease.id
    dispatch(6, "build", BUILD, [{"kind": "structure", "ref": "s1"}])
    dispatch(7, "lost", SPAWN, None)  # its answer never came back
    clock.move_to(minute(10))
    rl.reconciler.reconcile_module("world")  # z2 is gone before its time
    clock.move_to(minute(20))
    rl.reconciler.expire("world", "zone", "z1")
    clock.move_to(MID_RUN)
    festival.console[MID_RUN] = what_the_console_shows(rl, run)
    clock.move_to(minute(30))
    completed_by_hand(rl, run)
    clock.move_to(minute(40))
    rl.cleanup.sweep("w1")
    clock.move_to(AFTER_SWEEP)
    festival.console[AFTER_SWEEP] = what_the_console_shows(rl, run)
    clock.move_to(minute(50))
    keep(rl, ids["creature:c2"], "bob")
    clock.move_to(AFTER_KEEP)
    festival.console[AFTER_KEEP] = what_the_console_shows(rl, run)
    clock.move_to(minute(60))
    world.answer("restore", world.lease, answering({"ok": True}))
    world.answer("revert", BUILD, answering({"ok": True}))
    rl.cleanup.manual_cleanup(run, "alice")
    clock.move_to(minute(70))
    return festival


@pytest.fixture
def festival(rl: Runledger, world: World, clock: Clock) -> Festival:
    return stage_festival(rl, world, clock)


def expected_history(f: Festival) -> dict[str, list[tuple[str, str | None, str, datetime]]]:
    """Each subject's lines: (event, actor, outcome, time)."""
    # A pass claims each group right before its call: the spawn group's call took 30 s, and
    # every later group was claimed after its verdict was saved.
    first = ("RevertClaimed", "w1", "attempt 1", minute(40))
    claimed = ("RevertClaimed", "w1", "attempt 1", minute(40.5))
    reverted = ("Reverted", "w1", "reverted", minute(40.5))
    by_hand = [
        ("RevertClaimed", "alice (manual)", "attempt 1", minute(60)),
        ("Reverted", "alice (manual)", "reverted", minute(60)),
    ]
    return {
        "run": [("Started", None, "running", START), ("Completed", None, "completed", minute(30))],
        f.placeholder("spawn"): [
            ("Recorded", None, "placeholder", minute(1)),
            ("Superseded", None, "superseded", minute(1.5)),
        ],
        "creature:c1": [("Recorded", None, "live", minute(1.5)), first, reverted],
        "creature:c2": [
            ("Recorded", None, "live", minute(1.5)),
            first,
            ("RevertFailed", "w1", f'retry: {SPAWN} could not give "c2" back', minute(40.5)),
            ("Kept", "bob", "kept", minute(50)),
        ],
        f.placeholder("zones"): [
            ("Recorded", None, "placeholder", minute(3)),
            ("Superseded", None, "superseded", minute(3.5)),
        ],
        "zone:z1": [
            ("Recorded", None, "live", minute(3.5)),
            ("Expired", None, EXPIRED_REASON, minute(20)),
        ],
        "zone:z2": [
            ("Recorded", None, "live", minute(3.5)),
            ("Orphaned", None, ORPHANED_REASON, minute(10)),
            claimed,
            reverted,
        ],
        LEASE: [
            ("Recorded", None, "live", minute(5)),
            claimed,
            ("Drifted", "w1", DRIFT, minute(40.5)),
            ("AttemptsReset", "alice", "failing", minute(60)),
            *by_hand,
        ],
        f.placeholder("build"): [
            ("Recorded", None, "placeholder", minute(6)),
            ("Superseded", None, "superseded", minute(6.5)),
        ],
        "structure:s1": [
            ("Recorded", None, "live", minute(6.5)),
            claimed,
            ("RevertFailed", "w1", f"terminal: {CURSED}", minute(40.5)),
            ("AttemptsReset", "alice", "failing", minute(60)),
            *by_hand,
        ],
        f.placeholder("lost"): [("Recorded", None, "placeholder", minute(7)), claimed, reverted],
    }


def expected_states(f: Festival) -> dict[datetime, States]:
    mid_run = {
        f.placeholder("spawn"): ("superseded", 0),
        "creature:c1": ("live", 0),
        "creature:c2": ("live", 0),
        f.placeholder("zones"): ("superseded", 0),
        "zone:z1": ("expired", 0),
        "zone:z2": ("orphaned", 0),
        LEASE: ("live", 0),
        f.placeholder("build"): ("superseded", 0),
        "structure:s1": ("live", 0),
        f.placeholder("lost"): ("placeholder", 0),
    }
    # Mid-sweep, only the group whose call is out holds its claims: the others wait their turn.
    claims_held = mid_run | {"creature:c1": ("live", 1), "creature:c2": ("live", 1)}
    after_sweep = mid_run | {
        "creature:c1": ("reverted", 1),
        "creature:c2": ("failing", 1),
        "zone:z2": ("reverted", 1),
        LEASE: ("drifted", 1),
        "structure:s1": ("failing", 1),
        f.placeholder("lost"): ("reverted", 1),
    }
    after_keep = after_sweep | {"creature:c2": ("kept", 1)}
    final = after_keep | {LEASE: ("reverted", 1), "structure:s1": ("reverted", 1)}
    return {
        MID_RUN: mid_run,
        MID_SWEEP: claims_held,
        AFTER_SWEEP: after_sweep,
        AFTER_KEEP: after_keep,
        START: final,
    }


def by_subject(lines: Sequence[ReplayLine]) -> dict[str, list[tuple[str, str | None, str, Any]]]:
    found: dict[str, list[tuple[str, str | None, str, Any]]] = {}
    for line in lines:
        found.setdefault(line.subject, []).append((line.event, line.actor, line.outcome, line.at))
    return found


def store_order(rl: Runledger, ids: set[UUID]) -> list[tuple[int, str]]:
    """(position, event class) of these aggregates' events, read from the store's own sequence."""
    head = rl.app.recorder.max_notification_id() or 0
    found = rl.app.recorder.select_notifications(start=1, limit=head)
    return [(n.id, n.topic.rpartition(".")[2]) for n in found if n.originator_id in ids]


# --- replay ------------------------------------------------------------------------------------


def without_actors(history: dict[str, list[Any]]) -> dict[str, list[tuple[str, str, Any]]]:
    return {s: [(event, outcome, at) for event, _, outcome, at in h] for s, h in history.items()}


def test_a_replay_shows_every_event_of_the_run_and_its_entries_in_store_order(
    rl: Runledger, festival: Festival
) -> None:
    replay = rl.history.replay(festival.run)
    assert (replay.name, replay.run_status, replay.as_of) == ("festival", "completed", None)
    assert without_actors(by_subject(replay.lines)) == without_actors(expected_history(festival))
    ids = {festival.run, *festival.ids.values()}
    assert [(line.position, line.event) for line in replay.lines] == store_order(rl, ids)


def actors(history: dict[str, list[Any]], *, verdicts: bool) -> dict[str, list[tuple[str, Any]]]:
    return {
        s: [(e, a) for e, a, *_ in h if (e in VERDICTS) == verdicts] for s, h in history.items()
    }


def test_a_replay_names_who_claimed_reset_or_kept_each_entry(
    rl: Runledger, festival: Festival
) -> None:
    replayed = by_subject(rl.history.replay(festival.run).lines)
    expected = expected_history(festival)
    assert actors(replayed, verdicts=False) == actors(expected, verdicts=False)


def test_a_replay_names_the_worker_whose_claim_each_verdict_settled(
    rl: Runledger, festival: Festival
) -> None:
    """A verdict carries no actor of its own: it is the worker whose claim it settled."""
    replayed = by_subject(rl.history.replay(festival.run).lines)
    expected = expected_history(festival)
    assert actors(replayed, verdicts=True) == actors(expected, verdicts=True)


def test_a_replay_ends_with_the_cleanup_status_the_live_projections_show(
    rl: Runledger, festival: Festival
) -> None:
    replay = rl.history.replay(festival.run)
    assert replay.cleanup_status == cleanup_status(rl, festival.run) == "complete"
    live = {
        e.entry_id: (e.name, e.status, e.attempts, e.last_error)
        for e in rl.queries.entries(festival.run)
    }
    replayed = {e.entry_id: (e.name, e.state, e.attempts, e.last_error) for e in replay.entries}
    assert replayed == live
    assert {n: (s, a) for n, s, a, _ in replayed.values()} == expected_states(festival)[START]


@pytest.mark.parametrize(
    ("moment", "run_status", "status"),
    [
        (MID_RUN, "running", "pending"),
        (MID_SWEEP, "completed", "pending"),
        (AFTER_SWEEP, "completed", "pending"),
        (AFTER_KEEP, "completed", "incomplete"),
    ],
    ids=["mid-run", "claims-held-mid-sweep", "after-the-sweep", "after-bob-kept-c2"],
)
def test_a_replay_as_of_a_past_moment_shows_what_the_console_showed_then(
    rl: Runledger, festival: Festival, moment: datetime, run_status: str, status: str
) -> None:
    full = rl.history.replay(festival.run)
    then = rl.history.replay(festival.run, as_of=moment)
    assert then.as_of == moment
    assert then.lines == [line for line in full.lines if line.at <= moment]
    assert len(then.lines) < len(full.lines)
    states = {e.name: (e.state, e.attempts) for e in then.entries}
    assert states == expected_states(festival)[moment]
    assert (then.run_status, then.cleanup_status) == (run_status, status)
    assert (states, then.cleanup_status) == festival.console[moment]


def test_a_replay_narrowed_to_one_entry_shows_only_that_entry_beside_its_run(
    rl: Runledger, festival: Festival
) -> None:
    full = by_subject(rl.history.replay(festival.run).lines)
    for ref in ("creature:c2", "c2"):
        one = rl.history.replay(festival.run, entry_ref=ref)
        assert [e.name for e in one.entries] == ["creature:c2"]
        assert by_subject(one.lines) == {"run": full["run"], "creature:c2": full["creature:c2"]}
        assert one.cleanup_status == "complete"
    then = rl.history.replay(festival.run, as_of=AFTER_SWEEP, entry_ref="c2")
    assert [(e.state, e.attempts) for e in then.entries] == [("failing", 1)]
    assert then.cleanup_status == "pending"


def test_a_replay_of_an_unknown_run_or_entry_is_not_found(
    rl: Runledger, festival: Festival
) -> None:
    with pytest.raises(NotFound, match="no run"):
        rl.history.replay(uuid4())
    with pytest.raises(NotFound, match="no entry 'c9'"):
        rl.history.replay(festival.run, entry_ref="c9")


def test_a_replay_as_of_a_moment_before_the_run_began_says_so(
    rl: Runledger, festival: Festival
) -> None:
    with pytest.raises(NotFound, match="no run"):
        rl.history.replay(festival.run, as_of=START - timedelta(days=1))


def test_a_replay_of_a_run_from_a_spec_shows_its_steps_events_too(
    rl: Runledger, registry: Registry, clock: Clock
) -> None:
    run = plant_a_garden(rl, registry, clock)
    replay = rl.history.replay(run)
    subjects = by_subject(replay.lines)
    assert [e for e, *_ in subjects["step plant"]] == ["Planned", "DispatchClaimed", "Succeeded"]
    assert [e for e, *_ in subjects["tree:oak"]] == ["Recorded", "RevertClaimed", "Reverted"]
    ids = {run, Step.create_id(run, "plant"), *(e.entry_id for e in rl.queries.entries(run))}
    assert [(line.position, line.event) for line in replay.lines] == store_order(rl, ids)
    assert replay.cleanup_status == cleanup_status(rl, run) == "complete"


# --- rebuild -----------------------------------------------------------------------------------


def plant_a_garden(rl: Runledger, registry: Registry, clock: Clock) -> UUID:
    """A run from a spec, so that the steps view has rows too."""
    registry.module("garden").action(
        "garden.plant",
        perform=lambda params, idempotency_key, run_id: {
            "ok": True,
            "resources": [{"kind": "tree", "ref": "oak"}],
        },
        revert=lambda resources, idempotency_key, run_id: {"ok": True},
    )
    run = rl.runs.start(
        {
            "name": "garden",
            "phases": [
                {
                    "id": "p1",
                    "advance": "manual",
                    "steps": [{"id": "plant", "action": "garden.plant"}],
                },
            ],
        }
    )
    clock.advance(60)
    rl.runs.advance_leg("w1")
    clock.advance(60)
    rl.ledger.abort_run(run, "rain")
    clock.advance(60)
    rl.cleanup.sweep("w1")
    return run


def plant_on_schedule(rl: Runledger, clock: Clock) -> None:
    """A definition verified, published and scheduled twice: one occurrence cancelled, the
    other started by a tick, so that the definitions, occurrences and runs' origins have rows."""
    spec = {
        "name": "orchard",
        "phases": [{"id": "p1", "steps": [{"id": "plant", "action": "garden.plant"}]}],
    }
    rl.definitions.create("orchard", spec, "ann")
    rl.definitions.verify("orchard", "rita")
    rl.definitions.publish("orchard", "paul")
    due = rl.occurrences.schedule("orchard", clock.now + timedelta(seconds=60), "sam")
    dropped = rl.occurrences.schedule("orchard", clock.now + timedelta(seconds=60), "sam")
    rl.occurrences.cancel(dropped.id, "sam")
    clock.advance(60)
    assert rl.starts.start_leg("w1").started == [run_id_for(due.id)]


KEYS = {
    "rl_tracking": "name",
    "rl_runs": "run_id",
    "rl_resources": "entry_id",
    "rl_steps": "step_key",
    "rl_run_log": "position",
    "rl_runners": "runner_id",
    "rl_tokens": "token_id",
    "rl_definitions": "definition_id",
    "rl_occurrences": "occurrence_id",
    "rl_deliveries": "delivery_id",
}
Dump = dict[str, list[tuple[Any, ...]]]


def dump(rl: Runledger) -> Dump:
    """Every projection table, and the tracking positions, row by row in key order."""
    assert set(KEYS) == {"rl_tracking", *(v.table for v in all_views())}
    found = {}
    with rl.backend.transaction(commit=False) as cursor:
        for table, key in KEYS.items():
            cursor.execute(rl.backend.sql(f"SELECT * FROM {{{table}}} ORDER BY {key}"))
            found[table] = [tuple(row[k] for k in row.keys()) for row in cursor.fetchall()]  # noqa: SIM118
    return found


def tables(rl: Runledger) -> set[str]:
    with rl.backend.transaction(commit=False) as cursor:
        if isinstance(rl.backend, PostgresBackend):
            cursor.execute(
                "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = %s",
                [rl.backend.schema],
            )
        else:
            cursor.execute("SELECT name AS t FROM sqlite_master WHERE type = 'table'")
        return {row["t"] for row in cursor.fetchall()}


def tamper(rl: Runledger, table: str, key: UUID, column: str, value: Any) -> None:
    """Change one projected row by hand, as nothing in runledger ever would."""
    with rl.backend.transaction(commit=True) as cursor:
        cursor.execute(
            rl.backend.sql(f"UPDATE {{{table}}} SET {column} = %s WHERE {KEYS[table]} = %s"),
            [value, str(key)],
        )


def head(rl: Runledger) -> int:
    return rl.app.recorder.max_notification_id() or 0


def test_a_rebuild_from_position_zero_gives_equal_tables(
    rl: Runledger, festival: Festival, registry: Registry, clock: Clock
) -> None:
    plant_a_garden(rl, registry, clock)
    rl.fleet.leave(rl.fleet.join("gardener", ["garden"], ["garden.plant"], []))
    rl.tokens.revoke(rl.tokens.issue("gardener", "viewer", by="alice").token_id, by="alice")
    plant_on_schedule(rl, clock)
    rl.webhooks.add("http://nobody.invalid/nobody-listens", ["run.aborted"], by="alice")
    rl.ledger.abort_run(start(rl, makes("spawn", "c8"), name="told"), "a webhook to rebuild")
    assert rl.sender("w1").send_due() == 1  # refused: an attempt to rebuild too
    rl.projector.catch_up()
    before = dump(rl)
    assert all(before[t] for t in KEYS), "every table has rows to compare"
    seen: list[tuple[int, int]] = []
    report = rebuild(
        rl.app, rl.backend, progress=lambda count, reached: seen.append((count, reached))
    )
    assert report.swapped and report.differences == []
    assert report.views == list(EVERY_VIEW)
    assert report.events == sum(c for c, _ in seen) == head(rl) == report.position
    assert seen[-1][1] == head(rl)
    assert dump(rl) == before
    assert not {t for t in tables(rl) if t.endswith("_next")}
    assert rebuild(rl.app, rl.backend).swapped, "a rebuilt table can be rebuilt again"
    assert dump(rl) == before


def test_a_rebuild_of_one_projection_replaces_only_its_table(
    rl: Runledger, festival: Festival
) -> None:
    rl.projector.catch_up()
    before = dump(rl)
    c1 = festival.ids["creature:c1"]
    tamper(rl, "rl_resources", c1, "status", "live")
    tamper(rl, "rl_runs", festival.run, "name", "carnival")
    report = rebuild(rl.app, rl.backend, ["resources"])
    assert report.views == ["resources"] and report.swapped
    after = dump(rl)
    assert after["rl_resources"] == before["rl_resources"]
    assert after["rl_runs"] != before["rl_runs"], "the runs table was not rebuilt"
    assert [r for r in after["rl_runs"] if "carnival" in r]
    assert rl.projector.positions()["resources"] == head(rl)
    assert rl.queries.entry(c1) is not None
    with pytest.raises(KeyError, match="no projection named nosuch"):
        rebuild(rl.app, rl.backend, ["nosuch"])


def test_verify_names_a_row_someone_changed_by_hand_and_swaps_nothing(
    cli: Cli, rl: Runledger, festival: Festival, store_url: str, tmp_path: Path
) -> None:
    rl.projector.catch_up()
    assert rebuild(rl.app, rl.backend, verify=True).differences == []
    lease = festival.ids[LEASE]
    tamper(rl, "rl_resources", lease, "status", "drifted")
    with rl.backend.transaction(commit=True) as cursor:
        cursor.execute(rl.backend.sql("DELETE FROM {rl_run_log} WHERE position = %s"), [1])
    tampered = dump(rl)
    report = rebuild(rl.app, rl.backend, verify=True)
    assert not report.swapped
    [difference, lost] = report.differences
    assert (lost.table, lost.key, lost.live) == ("rl_run_log", "1", None)
    assert lost.rebuilt is not None and lost.rebuilt["kind"] == "run.started"
    assert (difference.table, difference.key) == ("rl_resources", str(lease))
    assert difference.live is not None and difference.rebuilt is not None
    assert (difference.live["status"], difference.rebuilt["status"]) == ("drifted", "reverted")
    assert {k for k in difference.live if difference.live[k] != difference.rebuilt[k]} == {"status"}
    assert dump(rl) == tampered
    assert not {t for t in tables(rl) if t.endswith("_next")}
    done = cli("rebuild", "--verify", cwd=tmp_path, env={"RUNLEDGER_DATABASE_URL": store_url})
    assert done.returncode == 1, done.stdout + done.stderr
    assert str(lease) in done.stdout and "rl_resources" in done.stdout
    assert "2 rows differ" in done.stdout
    assert dump(rl) == tampered


def test_naming_a_projection_twice_rebuilds_it_once(rl: Runledger, festival: Festival) -> None:
    rl.projector.catch_up()
    before = dump(rl)
    report = rebuild(rl.app, rl.backend, ["runs", "runs"])
    assert report.views == ["runs"] and report.swapped
    assert dump(rl) == before


WRITE_BATCH = 1_000
BULK_EVENTS = 10_000

KILLABLE_REBUILD = """
import sys
import runledger.projections.rebuild
from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.projections.rebuild import rebuild

# Pages of 2,000, so that a store of 10,000 events is rebuilt in several transactions.
runledger.projections.rebuild.REBUILD_PAGE = 2_000

with bootstrap(Settings(database_url=sys.argv[1]), Registry()) as rl:
    report = rebuild(rl.app, rl.backend, progress=lambda count, reached: print(
        "read", count, "reached", reached, flush=True))
    print("swapped at", report.position, flush=True)
"""


def write_in_bulk(rl: Runledger, events: int) -> UUID:
    """Runs of 999 entries, ~1,000 aggregates per save; answers the last run."""
    now = rl.clock()
    run_id = uuid4()
    for batch in range(events // WRITE_BATCH):
        run = Run.start(uuid4(), f"bulk {batch}", now)
        entries = [
            Resource(
                run_id=run.id,
                step="s",
                kind="creature",
                ref=f"b{batch}-{i}",
                module="world",
                action=SPAWN,
                idempotency_key=f"{run.id}:s",
                payload=None,
                member_key=None,
                until=None,
                at=now,
            )
            for i in range(WRITE_BATCH - 1)
        ]
        rl.app.save(run, *entries)
        run_id = run.id
    return run_id


def start_rebuild(store_url: str, tmp_path: Path) -> subprocess.Popen[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    return subprocess.Popen(
        [sys.executable, "-c", KILLABLE_REBUILD, store_url],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow  # a rebuild in a process of its own, killed
def test_a_rebuild_killed_midway_leaves_the_live_tables_serving_and_can_run_again(
    rl: Runledger, store_url: str, tmp_path: Path
) -> None:
    last = write_in_bulk(rl, BULK_EVENTS)
    rl.projector.catch_up()
    before = dump(rl)
    assert head(rl) == BULK_EVENTS and len(before["rl_resources"]) == BULK_EVENTS * 999 // 1000
    process = start_rebuild(store_url, tmp_path)
    try:
        assert process.stdout is not None and process.stderr is not None
        started = process.stdout.readline()
        assert started.startswith("read "), started + process.stderr.read()
        reached = int(started.split()[-1])
        serving = rl.queries.run(last, rl.clock(), 3)  # readers go on during the rebuild
        assert serving is not None and serving.entries == 999
        os.kill(process.pid, signal.SIGKILL)
        rest, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert "swapped" not in rest
    shadow = rl.backend.with_suffix("_next")
    with shadow.transaction(commit=False) as cursor:
        cursor.execute(shadow.sql("SELECT MIN(position) AS p FROM {rl_tracking}"))
        midway = int(cursor.fetchone()["p"])
    assert reached <= midway < head(rl), "the rebuild was killed before it finished"
    assert dump(rl) == before
    found = rl.queries.run(last, rl.clock(), 3)
    assert found is not None and (found.entries, found.cleanup_status) == (999, "pending")
    completed_by_hand(rl, last)
    rl.projector.catch_up()
    ended = rl.queries.run(last, rl.clock(), 3)  # the live projector goes on too
    assert ended is not None and ended.status == "completed"
    now_live = dump(rl)
    report = rebuild(rl.app, rl.backend)
    assert report.swapped and report.events == head(rl)
    assert dump(rl) == now_live
    assert not {t for t in tables(rl) if t.endswith("_next")}


def test_the_projections_command_lists_positions_and_lag_and_rebuild_reports_its_rate(
    cli: Cli, rl: Runledger, festival: Festival, store_url: str, tmp_path: Path
) -> None:
    rl.projector.catch_up()
    level = head(rl)
    start(rl, makes("spawn", "c9"), name="late")  # two events: the run started, its step planned
    env = {"RUNLEDGER_DATABASE_URL": store_url}
    listed = cli("projections", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert f"store head {level + 2}" in listed.stdout
    rows = dict(re.findall(r"(\w+)\s+│\s+(\d+\s+│\s+\d+)", listed.stdout))
    assert {k: v.split() for k, v in rows.items()} == {
        name: [str(level), "│", "2"]
        for name in (
            "resources",
            "run_log",
            "runs",
            "steps",
            "runners",
            "tokens",
            "definitions",
            "occurrences",
            "deliveries",
        )
    }
    rebuilt = cli("rebuild", "runs", cwd=tmp_path, env=env)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert re.search(
        rf"rebuilt runs: {level + 2} events in [\d.]+s \([\d,]+ events/s\); "
        rf"swapped in at position {level + 2}",
        rebuilt.stdout,
    ), rebuilt.stdout
    assert rl.projector.positions()["runs"] == level + 2


# --- step --------------------------------------------------------------------------------------


def test_stepping_a_drifted_lease_shows_baseline_applied_and_current_where_they_diverged(
    rl: Runledger, festival: Festival
) -> None:
    stepping = rl.history.step(festival.ids[LEASE])
    assert (stepping.name, stepping.total) == (LEASE, 6)
    assert [(f.version, f.event, f.at) for f in stepping.frames] == [
        (1, "Recorded", minute(5)),
        (2, "RevertClaimed", minute(40.5)),
        (3, "Drifted", minute(40.5)),
        (4, "AttemptsReset", minute(60)),
        (5, "RevertClaimed", minute(60)),
        (6, "Reverted", minute(60)),
    ]
    drifted = stepping.frames[2]
    assert drifted.values == {"baseline": "clear", "applied": "storm", "current": "hail"}
    assert drifted.state["state"] == "drifted"
    assert drifted.changed == {
        "state": ("live", "drifted"),
        "drift_current": (None, "hail"),
        "last_error": (None, DRIFT),
        "claim_worker": ("w1", None),
        "claim_expires_at": (stepping.frames[1].state["claim_expires_at"], None),
    }
    assert stepping.frames[0].values == {"baseline": "clear", "applied": "storm", "current": None}
    assert stepping.frames[3].changed["state"] == ("drifted", "failing")
    assert stepping.frames[3].changed["attempts"] == (1, 0)
    assert [f.actor for f in stepping.frames] == [
        None,
        "w1",
        "w1",
        "alice",
        "alice (manual)",
        "alice (manual)",
    ]


@pytest.fixture
def store_reads(rl: Runledger, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The versions of the stored events each read of an aggregate's stream returned.

    Instrumentation of the store, not a stand-in: every read still goes to the database.
    """
    recorder: Any = rl.app.recorder
    select_events = recorder.select_events
    reads: list[list[int]] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = select_events(*args, **kwargs)
        reads.append([e.originator_version for e in found])
        return found

    monkeypatch.setattr(recorder, "select_events", counted)
    return reads


def test_stepping_to_version_two_shows_two_versions_of_six(
    rl: Runledger, festival: Festival, store_reads: list[list[int]]
) -> None:
    everything = rl.history.step(festival.ids[LEASE])
    assert store_reads == [[1, 2, 3, 4, 5, 6]]
    store_reads.clear()
    stepping = rl.history.step(festival.ids[LEASE], upto=2)
    assert store_reads[0] == [1, 2]
    assert [f.event for f in stepping.frames] == ["Recorded", "RevertClaimed"]
    assert stepping.total == 6
    assert stepping.frames == everything.frames[:2]


def test_stepping_to_version_two_reads_no_event_past_version_two(
    rl: Runledger, festival: Festival, store_reads: list[list[int]]
) -> None:
    stepping = rl.history.step(festival.ids[LEASE], upto=2)
    assert len(stepping.frames) == 2
    assert store_reads == [[1, 2]]


def test_stepping_something_that_is_not_an_entry_is_refused_clearly(
    rl: Runledger, festival: Festival
) -> None:
    with pytest.raises(NotFound, match="no ledger entry"):
        rl.history.step(uuid4())
    with pytest.raises(BadRequest, match="is not a ledger entry"):
        rl.history.step(festival.run)


def test_stepping_to_version_zero_is_refused_as_no_such_version(
    rl: Runledger, festival: Festival
) -> None:
    with pytest.raises(BadRequest, match="version"):
        rl.history.step(festival.ids[LEASE], upto=0)

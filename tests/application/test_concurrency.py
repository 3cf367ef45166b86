"""Several workers on one store: every entry is given back exactly once, whoever gets there."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from tests.support.playing import (
    complete,
    ended,
    entry_of,
    fails,
    key,
    made,
    makes,
    placeholder,
    play,
)
from tests.support.procs import ACTION, MODULE, Workers, read_calls, sweep_until_done
from tests.support.world import World, answering

Factory = Callable[..., Runledger]


@dataclass
class Prepared:
    """Terminal runs that owe the world everything they made."""

    runs: list[UUID] = field(default_factory=list)
    entries: list[UUID] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)


def prepare_terminal_runs(rl: Runledger, runs: int, steps: int, per_step: int) -> Prepared:
    """Runs of ``steps`` answered steps each, every third with one more dispatch whose answer
    was lost; they end by abort (those: a step whose answer was lost is not done, so its run
    cannot complete), completion and cancellation with cleanup, in turn."""
    made_ = Prepared()
    for number in range(runs):
        refs = {f"s{s}": [f"r{number}-s{s}-c{i}" for i in range(per_step)] for s in range(steps)}
        answered = [makes(step_id, *named, action=ACTION) for step_id, named in refs.items()]
        lost = number % 3 == 0
        run = play(rl, *answered, *([fails("lost", ACTION)] if lost else []), name=f"run {number}")
        made_.runs.append(run)
        for step_id, named in refs.items():
            made_.entries += made(run, step_id, *named)
            made_.keys.append(key(run, step_id))
            made_.refs += named
        if lost:
            made_.entries.append(placeholder(run, "lost"))
            made_.keys.append(key(run, "lost"))
            rl.ledger.abort_run(run, "a step could not succeed")
        elif number % 3 == 1:
            complete(rl, run)
        else:
            rl.ledger.cancel_run(run, "alice", cleanup=True)
    return made_


def assert_all_given_back_once(rl: Runledger, made: Prepared) -> None:
    rl.projector.catch_up()
    entries = [entry_of(rl, e) for e in made.entries]
    assert Counter(e.state for e in entries) == {"reverted": len(made.entries)}
    assert {e.attempts for e in entries} == {1}
    statuses = rl.queries.runs(made.runs, rl.clock(), rl.settings.max_revert_attempts)
    assert Counter(s.cleanup_status for s in statuses) == {"complete": len(made.runs)}


def test_two_threads_sweeping_the_same_runs_give_each_entry_back_exactly_once(
    make_runledger: Factory, registry: Registry
) -> None:
    world = World()
    world.install(registry, ACTION)
    workers = [make_runledger(), make_runledger()]
    made = prepare_terminal_runs(workers[0], runs=20, steps=2, per_step=5)
    start = threading.Barrier(len(workers))

    def work(rl: Runledger, name: str) -> int:
        start.wait(timeout=10)
        return sweep_until_done(rl, name, limit=60)

    with ThreadPoolExecutor(len(workers)) as pool:
        futures = [pool.submit(work, rl, f"thread-{i}") for i, rl in enumerate(workers)]
        sweeps = [f.result(timeout=90) for f in futures]

    assert all(count >= 1 for count in sweeps)
    assert world.reverts == dict.fromkeys(made.keys, 1)
    assert world.reverted_refs == dict.fromkeys(made.refs, 1)
    assert_all_given_back_once(workers[1], made)


def one_terminal_run_of_two(rl: Runledger) -> tuple[UUID, list[UUID]]:
    run = ended(rl, makes("s", "c1", "c2", action=ACTION), name="interrupted")
    return run, made(run, "s", "c1", "c2")


def states(rl: Runledger, ids: list[UUID]) -> list[tuple[str, int]]:
    return [(e.state, e.attempts) for e in (entry_of(rl, i) for i in ids)]


def test_an_expiry_landing_while_a_revert_is_out_keeps_the_other_entries_verdicts(
    make_runledger: Factory, registry: Registry
) -> None:
    world = World()
    world.install(registry, ACTION)
    rl, module_side = make_runledger(), make_runledger()
    run, entries = one_terminal_run_of_two(rl)

    def expire_first_then_answer(resources: list[dict[str, object]], key: str) -> object:
        module_side.reconciler.expire(MODULE, "creature", "c1")
        return {"ok": True}

    world.answer("revert", ACTION, expire_first_then_answer)
    rl.cleanup.sweep("w1")

    assert states(rl, entries) == [("expired", 1), ("reverted", 1)]
    assert world.reverts == {key(run, "s"): 1}
    status = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert status is not None and status.cleanup_status == "complete"
    calls = [line for line in rl.queries.log(run) if line.kind.startswith("cleanup.")]
    assert [(c.kind, c.detail.get("resources")) for c in calls] == [
        ("cleanup.reverted", ["creature:c2"]),
        ("cleanup.swept", None),
    ]


def test_the_summary_of_a_pass_an_expiry_interrupted_counts_only_what_really_remains(
    make_runledger: Factory, registry: Registry
) -> None:
    world = World()
    world.install(registry, ACTION)
    rl, module_side = make_runledger(), make_runledger()
    run, _ = one_terminal_run_of_two(rl)

    def expire_first_then_answer(resources: list[dict[str, object]], key: str) -> object:
        module_side.reconciler.expire(MODULE, "creature", "c1")
        return {"ok": True}

    world.answer("revert", ACTION, expire_first_then_answer)
    summary = rl.cleanup.sweep("w1")[run]

    [swept] = [line for line in rl.queries.log(run) if line.kind == "cleanup.swept"]
    status = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert status is not None and status.unresolved == 0
    assert (summary.remaining, swept.detail["remaining"]) == (0, 0)


def test_an_orphaning_landing_while_a_revert_is_out_leaves_the_entry_to_the_worker(
    make_runledger: Factory, registry: Registry
) -> None:
    world = World()
    world.install(registry, ACTION)
    rl, module_side = make_runledger(), make_runledger()
    run, entries = one_terminal_run_of_two(rl)

    def orphan_first_then_answer(resources: list[dict[str, object]], key: str) -> object:
        world.answer("reconcile", ACTION, answering({"ok": True, "in_force": ["c2"]}))
        module_side.reconciler.reconcile_module(MODULE)
        return {"ok": True}

    world.answer("revert", ACTION, orphan_first_then_answer)
    rl.cleanup.sweep("w1")

    assert states(rl, entries) == [("reverted", 1), ("reverted", 1)]
    assert world.reverted_refs == {"c1": 1, "c2": 1}
    status = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert status is not None and status.cleanup_status == "complete"


@pytest.mark.postgres
@pytest.mark.slow
def test_four_processes_sweeping_one_postgres_store_give_each_entry_back_exactly_once(
    pg_url: str, tmp_path: Path
) -> None:
    registry = Registry()
    World().install(registry, ACTION)
    with bootstrap(Settings(database_url=pg_url), registry) as rl:
        made = prepare_terminal_runs(rl, runs=30, steps=2, per_step=5)
    calls = tmp_path / "calls.jsonl"
    workers = Workers(tmp_path)
    try:
        for number in range(4):
            workers.start("sweep", f"proc-{number}", "--url", pg_url, "--calls", str(calls))
        workers.release()
        workers.finish(timeout=90)
    finally:
        workers.end()

    lines = read_calls(calls)
    assert Counter(line["key"] for line in lines) == dict.fromkeys(made.keys, 1)
    assert Counter(ref for line in lines for ref in line["refs"]) == dict.fromkeys(made.refs, 1)
    with bootstrap(Settings(database_url=pg_url), Registry()) as rl:
        assert_all_given_back_once(rl, made)


@pytest.mark.slow
def test_of_four_processes_racing_to_claim_one_entry_exactly_one_wins(
    rl: Runledger, world: World, store_url: str, tmp_path: Path
) -> None:
    run = ended(rl, makes("s", "c1", action=ACTION), name="contested")
    [entry_id] = made(run, "s", "c1")
    workers = Workers(tmp_path)
    try:
        for number in range(4):
            workers.start("claim", f"proc-{number}", "--url", store_url, "--entry", str(entry_id))
        workers.release()
        answers = workers.finish(timeout=60)
    finally:
        workers.end()

    winners = [a["worker"] for a in answers if a["won"]]
    assert len(winners) == 1
    entry = entry_of(rl, entry_id)
    assert (entry.attempts, entry.claim_worker) == (1, winners[0])
    claims = [e for e in rl.app.events.get(entry_id) if isinstance(e, Resource.RevertClaimed)]
    assert len(claims) == 1
    assert entry.claim_expires_at is not None
    assert entry.claim_expires_at > claims[0].at + timedelta(seconds=50)

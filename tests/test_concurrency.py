"""Several workers on one store: every entry is given back exactly once, whoever gets there."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import pytest

from runledger.application.bootstrap import Runledger, bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from tests.conftest import drop_pg_url, new_pg_url
from tests.procs import ACTION, MODULE, Workers, read_calls, sweep_until_done
from tests.world import World

Factory = Callable[..., Runledger]


@dataclass
class Prepared:
    """Terminal runs that owe the world everything they made."""

    runs: list[UUID] = field(default_factory=list)
    entries: list[UUID] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)


def prepare_terminal_runs(rl: Runledger, runs: int, steps: int, per_step: int) -> Prepared:
    """Runs of ``steps`` answered steps each, every third with one dispatch whose answer was
    lost; they end by completion, abort and cancellation with cleanup, in turn."""
    made = Prepared()
    for number in range(runs):
        run = rl.ledger.start_run(f"run {number}")
        made.runs.append(run)
        for step in range(steps):
            key = f"{run}-s{step}"
            placeholder = rl.ledger.record_placeholder(run, f"s{step}", MODULE, ACTION, key)
            named = [{"kind": "creature", "ref": f"{key}-c{i}"} for i in range(per_step)]
            made.entries += rl.ledger.supersede(placeholder, named)
            made.keys.append(key)
            made.refs += [n["ref"] for n in named]
        if number % 3 == 0:
            key = f"{run}-lost"
            made.entries.append(rl.ledger.record_placeholder(run, "lost", MODULE, ACTION, key))
            made.keys.append(key)
        if number % 3 == 0:
            rl.ledger.complete_run(run)
        elif number % 3 == 1:
            rl.ledger.abort_run(run, "a step could not succeed")
        else:
            rl.ledger.cancel_run(run, "alice", cleanup=True)
    return made


def assert_all_given_back_once(rl: Runledger, made: Prepared) -> None:
    rl.projector.catch_up()
    entries = [rl.app.repository.get(e) for e in made.entries]
    assert all(isinstance(e, Resource) for e in entries)
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
    run = rl.ledger.start_run("interrupted")
    placeholder = rl.ledger.record_placeholder(run, "s", MODULE, ACTION, "k")
    named = [{"kind": "creature", "ref": "c1"}, {"kind": "creature", "ref": "c2"}]
    entries = rl.ledger.supersede(placeholder, named)
    rl.ledger.complete_run(run)
    return run, entries


def states(rl: Runledger, ids: list[UUID]) -> list[tuple[str, int]]:
    loaded = [rl.app.repository.get(i) for i in ids]
    return [(e.state, e.attempts) for e in loaded if isinstance(e, Resource)]


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

    world.answer(ACTION, expire_first_then_answer)
    rl.cleanup.sweep("w1")

    assert states(rl, entries) == [("expired", 1), ("reverted", 1)]
    assert world.reverts == {"k": 1}
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

    world.answer(ACTION, expire_first_then_answer)
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
        world.in_force[ACTION] = {"ok": True, "in_force": ["c2"]}
        module_side.reconciler.reconcile_module(MODULE)
        return {"ok": True}

    world.answer(ACTION, orphan_first_then_answer)
    rl.cleanup.sweep("w1")

    assert states(rl, entries) == [("reverted", 1), ("reverted", 1)]
    assert world.reverted_refs == {"c1": 1, "c2": 1}
    status = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert status is not None and status.cleanup_status == "complete"


@pytest.fixture
def pg_store(pg_admin: str) -> Iterator[str]:
    url = new_pg_url(pg_admin)
    init_store(Settings(database_url=url))
    yield url
    drop_pg_url(pg_admin, url)


@pytest.mark.postgres
@pytest.mark.slow
def test_four_processes_sweeping_one_postgres_store_give_each_entry_back_exactly_once(
    pg_store: str, tmp_path: Path
) -> None:
    with bootstrap(Settings(database_url=pg_store), Registry()) as rl:
        made = prepare_terminal_runs(rl, runs=30, steps=2, per_step=5)
    calls = tmp_path / "calls.jsonl"
    workers = Workers(tmp_path)
    try:
        for number in range(4):
            workers.start("sweep", f"proc-{number}", "--url", pg_store, "--calls", str(calls))
        workers.release()
        workers.finish(timeout=90)
    finally:
        workers.end()

    lines = read_calls(calls)
    assert Counter(line["key"] for line in lines) == dict.fromkeys(made.keys, 1)
    assert Counter(ref for line in lines for ref in line["refs"]) == dict.fromkeys(made.refs, 1)
    with bootstrap(Settings(database_url=pg_store), Registry()) as rl:
        assert_all_given_back_once(rl, made)


@pytest.mark.slow
def test_of_four_processes_racing_to_claim_one_entry_exactly_one_wins(
    rl: Runledger, store_url: str, tmp_path: Path
) -> None:
    run = rl.ledger.start_run("contested")
    placeholder = rl.ledger.record_placeholder(run, "s", MODULE, ACTION, "contested-key")
    [entry_id] = rl.ledger.supersede(placeholder, [{"kind": "creature", "ref": "c1"}])
    rl.ledger.complete_run(run)
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
    entry = rl.app.repository.get(entry_id)
    assert isinstance(entry, Resource)
    assert (entry.attempts, entry.claim_worker) == (1, winners[0])
    claims = [e for e in rl.app.events.get(entry_id) if isinstance(e, Resource.RevertClaimed)]
    assert len(claims) == 1
    assert entry.claim_expires_at is not None
    assert entry.claim_expires_at > claims[0].at + timedelta(seconds=50)

"""For every sequence of events, a run's status is a function of its entries' streams, nothing is
given back twice, and the projections rebuilt from position zero equal the live ones."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol
from uuid import UUID

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import BadRequest
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.leases import CORE_LEASE
from runledger.application.settings import Settings
from runledger.domain.errors import RunNotRunning
from runledger.domain.resource import LEASE_KIND, Resource
from runledger.domain.run import Run
from runledger.domain.status import CleanupStatus, cleanup_status
from tests.conftest import drop_pg_url, new_pg_url
from tests.support import playing
from tests.support.by_hand import claim
from tests.support.playing import NO_BACKOFF, Clock, dispatch_steps, entry_of, makes, start
from tests.support.world import World, answering

START = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
MAX_ATTEMPTS = 2
MODULE = "world"
ACTION = "world.spawn"
LEASE = "weather"
PLAYED = "play"
"""The one step of every run's spec: dispatched when a rule completes the run."""
VIEW_TABLES = {
    "rl_tracking": "name",
    "rl_runs": "run_id",
    "rl_resources": "entry_id",
    "rl_run_log": "position",
}
VERDICTS = ("done", "partly", "retry", "terminal", "drifted")
Verdict = str
UNTILS = st.lists(st.sampled_from([None, -60, 60, 3600]), min_size=0, max_size=3)


class Stores(Protocol):
    def create(self) -> str: ...
    def destroy(self, url: str) -> None: ...


class SQLiteFiles:
    def __init__(self) -> None:
        self.folders: dict[str, str] = {}

    def create(self) -> str:
        folder = tempfile.mkdtemp(prefix="rl-prop-")
        url = f"sqlite:///{Path(folder) / 'ledger.sqlite3'}"
        self.folders[url] = folder
        return url

    def destroy(self, url: str) -> None:
        shutil.rmtree(self.folders.pop(url), ignore_errors=True)


@dataclass
class PostgresSchemas:
    admin: str

    def create(self) -> str:
        return new_pg_url(self.admin)

    def destroy(self, url: str) -> None:
        drop_pg_url(self.admin, url)


class Complaints(logging.Handler):
    """Warnings and errors the ledger logged instead of raising: a sweep swallows them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


def revert_answer(verdict: Verdict, resources: list[dict[str, Any]]) -> Any:
    if verdict == "done" or (verdict == "partly" and not resources):
        return {"ok": True}
    if verdict == "partly":
        return {"ok": True, "failed": [resources[0]["ref"]]}
    if verdict == "retry":
        return {"ok": False, "error": "the shard is busy"}
    if verdict == "terminal":
        return {"ok": False, "retry": False, "error": "the shard refuses for good"}
    return {"drifted": True, "current": "somebody else's"}


def expected_status(run: Run, entries: list[Resource], now: datetime) -> CleanupStatus:
    def in_play(e: Resource) -> bool:
        # Retryable now, or an attempt in flight that has not answered yet.
        workable = e.unresolved and e.state != "drifted" and not e.terminal
        return e.retryable(now, MAX_ATTEMPTS) or (workable and e.under_live_claim(now))

    return cleanup_status(
        running=not run.is_terminal,
        entries=len(entries),
        unresolved=sum(e.unresolved for e in entries),
        open_=sum(in_play(e) for e in entries),
    )


class LedgerMachine(RuleBasedStateMachine):
    """Random runs, recordings, verdicts, reconciles, expiries and people's decisions."""

    stores: ClassVar[Stores]

    def __init__(self) -> None:
        super().__init__()
        self.url = self.stores.create()
        self.rl: Runledger | None = None
        try:
            init_store(Settings(database_url=self.url))
        except BaseException:
            self.stores.destroy(self.url)
            raise
        self.clock = Clock(START)
        self.verdict: Verdict = "done"
        self.world = World(name=MODULE)
        self.registry = Registry()
        self.world.install(self.registry, ACTION)
        self.world.answer(
            "revert", ACTION, lambda resources, _: revert_answer(self.verdict, resources)
        )
        self.world.answer("restore", self.world.lease, self._restore)
        self.restored: Counter[str] = Counter()
        settings = Settings(database_url=self.url, max_revert_attempts=MAX_ATTEMPTS, **NO_BACKOFF)
        self.rl = bootstrap(settings, self.registry, clock=self.clock)
        self.runs: dict[UUID, str] = {}
        self.entries: list[UUID] = []
        self.complaints = Complaints()
        logging.getLogger("runledger").addHandler(self.complaints)
        self.serial = 0

    @property
    def ledger(self) -> Runledger:
        assert self.rl is not None
        return self.rl

    def _restore(self, baseline: Any, expected: Any, target: str) -> Any:
        # A restore puts back one value: it has no "failed" list to give.
        answer = revert_answer("done" if self.verdict == "partly" else self.verdict, [])
        if answer == {"ok": True}:
            self.restored[target] += 1
        return answer

    def _next(self) -> int:
        self.serial += 1
        return self.serial

    def _runs(self, running: bool) -> list[UUID]:
        return [r for r, s in self.runs.items() if (s == "running") == running]

    def _load(self, ids: list[UUID]) -> list[Resource]:
        return [entry_of(self.ledger, i) for i in ids]

    def _entries_of(self, run_id: UUID) -> list[Resource]:
        return [e for e in self._load(self.entries) if e.run_id == run_id]

    def _named(self) -> list[Resource]:
        return [e for e in self._load(self.entries) if not e.is_placeholder]

    # --- runs -------------------------------------------------------------------------------

    @precondition(lambda self: len(self.runs) < 4)
    @rule()
    def start_a_run(self) -> None:
        """A run from a spec of one step, its dispatch left to the run's completion: until then
        every entry it has is one the rules below recorded."""
        number = self._next()
        run_id = start(
            self.ledger, makes(PLAYED, action=ACTION), name=f"run {number}", run_id=UUID(int=number)
        )
        self.runs[run_id] = "running"

    def _complete(self, run_id: UUID) -> None:
        """The run's step is dispatched (it names nothing), then a person ends its phase."""
        dispatch_steps(self.ledger, run_id)
        self.entries.append(playing.placeholder(run_id, PLAYED))
        playing.complete(self.ledger, run_id)

    @precondition(lambda self: self._runs(running=True))
    @rule(
        data=st.data(),
        how=st.sampled_from(["complete", "abort", "cancel"]),
        tick=st.none() | st.sampled_from(VERDICTS),
    )
    def end_a_run_with_cleanup(self, data: st.DataObject, how: str, tick: Verdict | None) -> None:
        """``tick`` is the sweep of the runner's tick that ended the run, if it ran."""
        run_id = data.draw(st.sampled_from(self._runs(running=True)))
        if how == "complete":
            self._complete(run_id)
        elif how == "abort":
            self.ledger.ledger.abort_run(run_id, "a step could not succeed")
        else:
            self.ledger.ledger.cancel_run(run_id, "alice", cleanup=True)
        self.runs[run_id] = "ended"
        if tick is not None:
            self.sweep(tick)

    @precondition(lambda self: self._runs(running=True))
    @rule(data=st.data())
    def cancel_a_run_keeping_everything(self, data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(self._runs(running=True)))
        unresolved = [e for e in self._entries_of(run_id) if e.unresolved]
        # An overdue lease whose restore is out right now is left to that call's verdict.
        now = self.clock()
        owed = [e for e in unresolved if not e.under_live_claim(now)]
        out = [e for e in unresolved if e.under_live_claim(now)]
        calls = sum(self.world.reverts.values()) + sum(self.world.restores.values())
        kept = self.ledger.ledger.cancel_run(run_id, "bob", cleanup=False)
        self.runs[run_id] = "ended"
        assert kept == len(owed)
        after = self._load([e.id for e in owed])
        assert [(e.state, e.attempts) for e in after] == [("kept", o.attempts) for o in owed]
        left = self._load([e.id for e in out])
        assert [(e.state, e.claim_worker) for e in left] == [(o.state, o.claim_worker) for o in out]
        assert sum(self.world.reverts.values()) + sum(self.world.restores.values()) == calls

    # --- recording --------------------------------------------------------------------------

    @initialize(
        runs=st.integers(1, 3), steps=st.lists(UNTILS, min_size=1, max_size=3), lease=st.booleans()
    )
    def some_runs_are_under_way(
        self, runs: int, steps: list[list[int | None]], lease: bool
    ) -> None:
        for _ in range(runs):
            self.start_a_run()
        first = self._runs(running=True)[0]
        for untils in steps:
            self._dispatch(first, untils)
        if lease:
            self._lease(first, 60)

    def _dispatch(self, run_id: UUID, untils: list[int | None] | None) -> None:
        number = self._next()
        entry = self.ledger.ledger.record_placeholder(
            run_id, f"s{number}", MODULE, ACTION, f"k{number}"
        )
        assert entry not in self.entries
        self.entries.append(entry)
        if untils is not None:
            self._supersede(entry, untils)

    def _supersede(self, placeholder: UUID, untils: list[int | None]) -> None:
        now = self.clock()
        named = [
            {
                "kind": "creature",
                "ref": f"r{self._next()}",
                "until": None if until is None else now + timedelta(seconds=until),
            }
            for until in untils
        ]
        ids = self.ledger.ledger.supersede(placeholder, named)
        assert not set(ids) & set(self.entries)
        self.entries += ids

    def _lease(self, run_id: UUID, seconds: int) -> None:
        """A core.lease step's dispatch: its placeholder, superseded by the override applied."""
        number = self._next()
        held = self.ledger.ledger.record_placeholder(
            run_id, f"s{number}", MODULE, CORE_LEASE, f"k{number}"
        )
        override = {
            "kind": LEASE_KIND,
            "ref": f"{LEASE}#t{number}",
            "payload": {"baseline": "clear", "applied": "storm"},
            "until": self.clock() + timedelta(seconds=seconds),
        }
        self.entries += [held, *self.ledger.ledger.supersede(held, [override])]

    @precondition(lambda self: self._runs(running=True))
    @rule(data=st.data(), untils=st.none() | UNTILS)
    def dispatch_a_step(self, data: st.DataObject, untils: list[int | None] | None) -> None:
        """Record before confirm; ``None`` is a dispatch whose answer was lost."""
        self._dispatch(data.draw(st.sampled_from(self._runs(running=True))), untils)

    @precondition(lambda self: self.entries and self._runs(running=True))
    @rule(data=st.data())
    def record_an_entry_again(self, data: st.DataObject) -> None:
        running = set(self._runs(running=True))
        again = [e for e in self._load(self.entries) if e.run_id in running and e.is_placeholder]
        if not again:
            return
        entry = again[data.draw(st.integers(0, len(again) - 1))]
        same = self.ledger.ledger.record_placeholder(
            entry.run_id, entry.step, MODULE, ACTION, entry.idempotency_key
        )
        assert same == entry.id
        assert self._load([entry.id])[0].version == entry.version

    @precondition(lambda self: self._runs(running=False))
    @rule(data=st.data())
    def recording_for_an_ended_run_is_refused(self, data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(self._runs(running=False)))
        with pytest.raises(RunNotRunning):
            self.ledger.ledger.record_placeholder(run_id, "late", MODULE, ACTION, "late-key")

    @precondition(lambda self: self.entries)
    @rule(data=st.data(), untils=UNTILS)
    def a_late_answer_supersedes_a_placeholder(
        self, data: st.DataObject, untils: list[int | None]
    ) -> None:
        waiting = [e.id for e in self._load(self.entries) if e.state == "placeholder"]
        if waiting:
            self._supersede(waiting[data.draw(st.integers(0, len(waiting) - 1))], untils)

    @precondition(lambda self: self._runs(running=True))
    @rule(data=st.data(), seconds=st.sampled_from([30, 120, 3600]))
    def record_a_lease(self, data: st.DataObject, seconds: int) -> None:
        self._lease(data.draw(st.sampled_from(self._runs(running=True))), seconds)

    # --- giving back ------------------------------------------------------------------------

    @rule(verdict=st.sampled_from(VERDICTS))
    def sweep(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.ledger.cleanup.sweep("sweeper")
        if verdict == "done":
            # Everything the sweep may take is few enough here for one pass to take it all.
            now = self.clock()
            owed = [
                e.ref
                for e in self._load(self.entries)
                if e.retryable(now, MAX_ATTEMPTS)
                and (
                    self.runs[e.run_id] == "ended"
                    or (e.is_lease and e.until is not None and e.until <= now)
                )
            ]
            assert owed == []

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), verdict=st.sampled_from(VERDICTS))
    def clean_one_run(self, data: st.DataObject, verdict: Verdict) -> None:
        self.verdict = verdict
        run_id = data.draw(st.sampled_from(list(self.runs)))
        self.ledger.projector.catch_up()
        self.ledger.cleanup.clean_run(run_id, worker="cleaner", by="cleaner")

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), verdict=st.sampled_from(VERDICTS))
    def a_person_asks_for_cleanup_again(self, data: st.DataObject, verdict: Verdict) -> None:
        self.verdict = verdict
        run_id = data.draw(st.sampled_from(list(self.runs)))
        if self.runs[run_id] == "running":
            with pytest.raises(BadRequest):
                self.ledger.cleanup.manual_cleanup(run_id, "carol")
            return
        now = self.clock()
        asked = [
            e.id for e in self._entries_of(run_id) if e.unresolved and not e.under_live_claim(now)
        ]
        self.ledger.cleanup.manual_cleanup(run_id, "carol")
        if verdict == "done":
            assert {e.state for e in self._load(asked)} <= {"reverted"}

    @precondition(lambda self: self.entries)
    @rule(data=st.data(), whole_run=st.booleans())
    def a_worker_claims_and_dies(self, data: st.DataObject, whole_run: bool) -> None:
        """A worker takes one entry, or everything a run owes, and dies before any verdict."""
        now = self.clock()
        entries = self._load(self.entries)
        if whole_run:
            run_id = data.draw(st.sampled_from(list(self.runs)))
            chosen = [e for e in entries if e.run_id == run_id]
        else:
            chosen = [entries[data.draw(st.integers(0, len(entries) - 1))]]
        expires = now + timedelta(seconds=40)
        for entry in chosen:
            claimable = entry.retryable(now, MAX_ATTEMPTS)
            assert claim(self.ledger, entry.id, "ghost", expires, MAX_ATTEMPTS) == claimable

    @rule(seconds=st.sampled_from([1, 20, 45, 90, 600, 3600]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)

    # --- the world speaks -------------------------------------------------------------------

    @precondition(lambda self: self.entries)
    @rule(data=st.data(), clear=st.booleans())
    def the_module_reconciles(self, data: st.DataObject, clear: bool) -> None:
        asked = {
            e.id: e.ref
            for e in self._named()
            if e.kind != LEASE_KIND and e.state in ("live", "failing")
        }
        refs = sorted(asked.values())
        gone = data.draw(st.sets(st.sampled_from(refs))) if refs else set()
        held = [e.ref for e in self._named() if e.ref not in gone]
        self.world.answer(
            "reconcile",
            ACTION,
            answering({"ok": True, "in_force": held} if clear else {"ok": "yes", "in_force": held}),
        )
        before = {e.id: e for e in self._named()}
        try:
            self.ledger.reconciler.reconcile_module(MODULE)
        finally:
            self.world.answer("reconcile", ACTION, None)
        now = self.clock()
        for after in self._load(list(before)):
            was = before[after.id]
            if not clear or was.id not in asked or was.ref not in gone:
                assert after.version == was.version, f"{was.ref} changed"
            elif was.until is not None and was.until <= now:
                assert after.state == "expired"
            else:
                assert after.state == "orphaned"

    @precondition(lambda self: self.entries)
    @rule(data=st.data())
    def the_module_says_one_expired(self, data: st.DataObject) -> None:
        named = self._named()
        if not named:
            return
        entry = named[data.draw(st.integers(0, len(named) - 1))]
        answer = self.ledger.reconciler.expire(MODULE, entry.kind, entry.ref)
        assert answer == {"expired": int(entry.unresolved)}
        after = self._load([entry.id])[0]
        assert after.state == ("expired" if entry.unresolved else entry.state)

    @rule(kind=st.sampled_from(["", "k" * 65]))
    def a_malformed_expiry_changes_nothing(self, kind: str) -> None:
        versions = [e.version for e in self._load(self.entries)]
        assert self.ledger.reconciler.expire(MODULE, kind, "r1") == {"expired": 0}
        assert [e.version for e in self._load(self.entries)] == versions

    # --- what must hold after every step ----------------------------------------------------

    @invariant()
    def the_ledger_holds_together(self) -> None:
        entries = self._load(self.entries)
        self.every_status_is_a_function_of_the_streams(entries)
        self.nothing_is_given_back_twice(entries)
        assert self.complaints.records == [], "the ledger logged instead of raising"

    def every_status_is_a_function_of_the_streams(self, entries: list[Resource]) -> None:
        rl = self.ledger
        rl.projector.catch_up()
        now = self.clock()
        for run_id in self.runs:
            run = rl.ledger.get_run(run_id)
            row = rl.queries.run(run_id, now, MAX_ATTEMPTS)
            assert row is not None
            mine = [e for e in entries if e.run_id == run_id]
            made = [e for e in mine if e.state != "superseded"]  # a replaced placeholder is not
            assert (row.status, row.entries) == (run.status, len(made))
            assert row.cleanup_status == expected_status(run, mine, now), run.name
        for entry in entries:
            found = rl.queries.entry(entry.id)
            assert found is not None
            assert (
                found.status,
                found.attempts,
                found.terminal,
                found.claim_worker,
                found.version,
            ) == (
                entry.state,
                entry.attempts,
                entry.terminal,
                entry.claim_worker,
                entry.version,
            )

    def nothing_is_given_back_twice(self, entries: list[Resource]) -> None:
        assert all(n == 1 for n in self.world.reverted_refs.values())
        assert all(n == 1 for n in self.restored.values())
        for entry in entries:
            if entry.is_placeholder:
                continue
            given = self.restored if entry.is_lease else self.world.reverted_refs
            name = entry.ref.partition("#")[2] if entry.is_lease else entry.ref
            assert (entry.state == "reverted") == (given[name] == 1), entry.ref

    def teardown(self) -> None:
        logging.getLogger("runledger").removeHandler(self.complaints)
        try:
            if self.rl is not None:
                assert_rebuild_equals_live(self.rl)
        finally:
            if self.rl is not None:
                self.rl.close()
            self.stores.destroy(self.url)


def snapshot(rl: Runledger) -> dict[str, list[dict[str, Any]]]:
    tables: dict[str, list[dict[str, Any]]] = {}
    with rl.backend.transaction(commit=False) as cursor:
        for table, key in VIEW_TABLES.items():
            cursor.execute(rl.backend.sql(f"SELECT * FROM {{{table}}} ORDER BY {key}"))
            tables[table] = [dict(row) for row in cursor.fetchall()]
    return tables


def assert_rebuild_equals_live(rl: Runledger) -> None:
    rl.projector.catch_up()
    live = snapshot(rl)
    with rl.backend.transaction(commit=True) as cursor:
        for table in ("rl_runs", "rl_resources", "rl_run_log"):
            cursor.execute(rl.backend.sql(f"DELETE FROM {{{table}}}"))
        cursor.execute(rl.backend.sql("UPDATE {rl_tracking} SET position = 0"))
    rl.projector.catch_up()
    assert snapshot(rl) == live


def run_machine(stores: Stores, examples: int) -> None:
    machine = type(f"LedgerMachineOn{type(stores).__name__}", (LedgerMachine,), {"stores": stores})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


@pytest.mark.slow  # seconds of generated histories: in the slow tier, run first
def test_every_sequence_keeps_status_derived_and_gives_nothing_back_twice_on_sqlite() -> None:
    run_machine(SQLiteFiles(), examples=40)


@pytest.mark.slow  # seconds of generated histories: in the slow tier, run first
@pytest.mark.postgres
def test_every_sequence_keeps_status_derived_and_gives_nothing_back_twice_on_postgres(
    pg_admin: str,
) -> None:
    run_machine(PostgresSchemas(pg_admin), examples=8)

"""The world-audit drill: runner processes with the built-in modules, killed, frozen and faced
with a world that fails, hangs and answers late, while people cancel, abort and retry; then
everything settles and the world itself is held against the ledger (``world_audit_check``).

``scripts/world_audit.py`` runs it from the terminal and ``tests/application/test_world_audit.py``
runs a short one; both read its ``Result``.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from uuid import UUID, uuid4

import redis
from eventsourcing.persistence import IntegrityError, OperationalError

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.errors import RunledgerError, StoreError
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.errors import DomainError
from runledger.projections.queries import RunRow
from scripts.drills.world_audit_check import Findings, Ledger, compare, read_ledger, read_world
from scripts.drills.world_audit_faults import BUDGET_S, HANG_S, Faults, GameMaster
from scripts.drills.world_audit_procs import People, Runners, child_env
from scripts.drills.world_audit_specs import REDIS_KINDS, Specs, pool
from scripts.pg import PG_ADMIN, drop_pg_url, new_pg_url

T = TypeVar("T")
REDIS_URL = "redis://127.0.0.1:6379/0"
CLAIM_SLACK_S = 0.5  # a claim lasts its call's budget and this: a frozen runner's lapse
FREEZE_S = (1.0, 5.0)
ENDINGS = ["cancel", "cancel, keeping", "abort"]
# One SQLite file shared by several processes answers "locked" now and then (a runner says it
# once and tries again next tick); the drill's own reads and writes wait and try again too.
STORE_TROUBLE = (OperationalError, StoreError)


@dataclass(frozen=True)
class Plan:
    store: str  # sqlite or postgres
    runs: int
    runners: int
    minutes: float
    kills: int
    freezes: int
    seed: int = 1
    settle_s: float = 300.0
    pg_admin: str = PG_ADMIN
    redis_url: str = REDIS_URL


@dataclass
class Tally:
    runs: int = 0
    refused: list[str] = field(default_factory=list)  # starts refused (then made without leases)
    kills: int = 0
    freezes: int = 0
    acts: Counter[str] = field(default_factory=Counter)
    contested: int = 0  # retries of a run whose lease target another live run held then
    store_waits: int = 0  # the drill's own reads or writes the store answered "locked"


@dataclass
class Result:
    plan: Plan
    tally: Tally
    faults: Faults
    game_master: GameMaster
    findings: Findings
    ledger: Ledger
    retries: int
    exits: Counter[int]  # of the people's cleanup commands
    died: list[str]
    seconds: float
    settled_s: float
    folder: Path

    def late_answers(self) -> tuple[int, int]:
        """Late answers the ledger logged, and how many of them came after their run ended."""
        after = [d for d in self.ledger.late if d.get("run", "running") != "running"]
        return len(self.ledger.late), len(after)


class Drill:
    def __init__(self, plan: Plan, rl: Runledger, folder: Path, env: dict[str, str]) -> None:
        self.plan, self.rl = plan, rl
        self.rng = random.Random(plan.seed)
        self.world_path = Path(env["RUNLEDGER_SANDBOX_PATH"])
        self.prefix = env["RUNLEDGER_REDIS_PREFIX"]
        self.client = redis.Redis.from_url(plan.redis_url, decode_responses=True)
        self.specs = Specs(pool(self.prefix), self.rng)
        self.faults = Faults(self.world_path, self.rng)
        self.gm = GameMaster(self.world_path, self.client, self.specs.targets, self.rng)
        self.runners = Runners(folder, env, ("--claim-slack-s", str(CLAIM_SLACK_S)))
        self.people = People(folder, env)
        self.tally = Tally()
        self.run_ids: list[UUID] = []
        self.acts: list[tuple[float, UUID, str]] = []
        self.settled_s = 0.0

    def play(self) -> None:
        plan, rng = self.plan, self.rng
        self.gm.set_before()
        for n in range(plan.runners):
            self.runners.start(f"r{n + 1}")
        span = plan.minutes * 60
        self._first_start(time.monotonic() + 120)
        epoch = time.monotonic()
        starts = [0.75 * span * n / plan.runs for n in range(1, plan.runs)]
        kills = sorted(rng.uniform(0.03, 0.9) * span for _ in range(plan.kills))
        freezes = sorted(rng.uniform(0.03, 0.9) * span for _ in range(plan.freezes))
        next_fault, next_gm, next_retry = 1.0, 5.0, 6.0
        while (now := time.monotonic() - epoch) < span or starts or freezes:
            while starts and starts[0] <= now:
                starts.pop(0)
                self._start()
            if kills and kills[0] <= now:
                kills.pop(0)
                self.runners.kill(rng.choice(sorted(self.runners.procs)))
                self.tally.kills += 1
            if freezes and freezes[0] <= now:
                freezes[0] = now + 0.5  # unless one runner is left awake to freeze
                awake = sorted(set(self.runners.procs) - set(self.runners.frozen))
                if len(awake) > 1:  # one runner always works
                    freezes.pop(0)
                    self.runners.freeze(rng.choice(awake), rng.uniform(*FREEZE_S))
                    self.tally.freezes += 1
            self.runners.restart_the_dead()
            self._act(time.monotonic())
            if not self.faults.stalled():  # the drill's own writes to the world would wait
                self.faults.close(now)
                if now >= next_fault and now < span * 0.9:
                    self._fault(now)
                    next_fault = now + rng.uniform(1.5, 4.5)
                if now >= next_gm:
                    self.gm.change(self.specs.holders, self._running())
                    next_gm = now + rng.uniform(3, 8)
            if now >= next_retry and self.people.busy() < 2:
                self._retry()
                next_retry = now + rng.uniform(3, 7)
            time.sleep(0.05)

    def _first_start(self, deadline: float) -> None:
        """The first run waits for a runner to serve its actions (until then it is refused)."""
        while True:
            try:
                self._begin(0)
                return
            except RunledgerError:
                if time.monotonic() > deadline:
                    raise
                self.runners.restart_the_dead()
                time.sleep(0.5)

    def _start(self) -> None:
        """A start is refused while another live run holds a target it leases: another spec
        then, and after three refusals one without leases."""
        n = len(self.run_ids)
        for leases in (True, True, True, False):
            try:
                self._begin(n, leases)
                return
            except RunledgerError as error:
                self.tally.refused.append(str(error))

    def _begin(self, n: int, leases: bool = True) -> None:
        spec, run_id = self.specs.spec(n, leases), uuid4()
        self._patiently(lambda: self._start_once(spec, run_id))
        self.specs.started(run_id, n, spec)
        self.run_ids.append(run_id)
        self.tally.runs += 1
        if (roll := self.rng.random()) < 0.4:
            ending = ENDINGS[0 if roll < 0.15 else 1 if roll < 0.25 else 2]
            self.acts.append((time.monotonic() + self.rng.uniform(0.1, 6), run_id, ending))

    def _start_once(self, spec: dict[str, object], run_id: UUID) -> None:
        with suppress(IntegrityError):  # saved by an earlier try whose answer was lost
            self.rl.runs.start(spec, run_id=run_id)

    def _fault(self, now: float) -> None:
        scope = self.faults.open(now)
        if scope is not None:  # a hang: some of its calls answer after their run has ended
            for run in self._running(lambda r: scope in self.specs.actions[r.run_id])[:2]:
                ending = self.rng.choice(ENDINGS)
                self.acts.append((time.monotonic() + self.rng.uniform(0.3, 1.5), run, ending))

    def _act(self, now: float) -> None:
        for act in [a for a in self.acts if a[0] <= now]:
            self.acts.remove(act)
            _, run_id, ending = act
            try:
                if ending == "abort":
                    self.rl.ledger.abort_run(run_id, "the drill aborts it", by="ops")
                else:
                    self.rl.ledger.cancel_run(run_id, "ops", cleanup=ending == "cancel")
                self.tally.acts[ending] += 1
            except (IntegrityError, *STORE_TROUBLE):  # a runner saved the run meanwhile
                self.acts.append((time.monotonic() + 0.2, run_id, ending))
            except (RunledgerError, DomainError):
                self.tally.acts["too late to " + ending] += 1

    def _retry(self) -> None:
        """A person asks again for a run that needs one, rather one whose lease target another
        live run holds now."""
        rows = self._rows()
        running = {r.run_id for r in rows if r.status == "running"}
        needy = [r.run_id for r in rows if r.cleanup_status == "incomplete"]
        if not needy:
            return
        values = self.gm.values()
        holder = {ref: self.specs.holders.get(repr(v)) for ref, v in values.items()}
        contested = [
            run
            for run in needy
            if any(holder[ref] in running - {run} for ref in self.specs.leased(run))
        ]
        self.tally.contested += bool(contested)
        self.people.retry(self.rng.choice(contested or needy))

    def _rows(self) -> list[RunRow]:
        rl = self.rl
        now, most = rl.clock(), rl.settings.max_revert_attempts
        return self._patiently(lambda: rl.queries.runs(self.run_ids, now, most))

    def _running(self, keep: Callable[[RunRow], bool] = lambda _: True) -> list[UUID]:
        return [r.run_id for r in self._rows() if r.status == "running" and keep(r)]

    def _patiently(self, work: Callable[[], T]) -> T:
        for _ in range(60):
            try:
                return work()
            except STORE_TROUBLE:
                self.tally.store_waits += 1
                time.sleep(0.5)
        return work()

    def settle(self) -> None:
        """Faults cleared, everyone thawed, then the runners work until every run has ended
        and nothing is left to retry, twice in a row after the last hang has answered."""
        started = time.monotonic()
        self.faults.clear()
        self.runners.thaw()
        self.people.wait()
        quiet = time.monotonic() + BUDGET_S + HANG_S[1] + 2
        deadline = started + self.plan.settle_s
        calm = 0
        while time.monotonic() < deadline and calm < 2:
            self.runners.restart_the_dead()
            self._act(float("inf"))
            rows = self._rows()
            done = all(r.status != "running" and r.cleanup_status != "pending" for r in rows)
            calm = calm + 1 if done and time.monotonic() > quiet else 0
            time.sleep(1.0)
        self.settled_s = time.monotonic() - started
        self.runners.stop()

    def audit(self) -> tuple[Findings, Ledger]:
        kinds = [*REDIS_KINDS, "zone"]
        world = read_world(self.world_path, self.client, self.prefix, kinds, self.specs.targets)
        ledger = self._patiently(lambda: read_ledger(self.rl, self.run_ids))
        found = compare(world, ledger, self.specs.targets, self.gm.owners, self.specs.leases)
        return found, ledger


def run_drill(plan: Plan, folder: Path | None = None) -> Result:
    folder = folder or Path(tempfile.mkdtemp(prefix="world_audit_"))
    started = time.monotonic()
    postgres = plan.store == "postgres"
    url = new_pg_url(plan.pg_admin) if postgres else f"sqlite:///{folder / 'ledger.sqlite3'}"
    env = child_env(
        RUNLEDGER_DATABASE_URL=url,
        RUNLEDGER_BUILTIN_MODULES="sandbox,redis",
        RUNLEDGER_SANDBOX_PATH=str(folder / "world.sqlite3"),
        RUNLEDGER_SANDBOX_BUDGET_MS=str(int(BUDGET_S * 1000)),
        RUNLEDGER_REDIS_URL=plan.redis_url,
        RUNLEDGER_REDIS_PREFIX=f"rlaudit:{uuid4().hex[:10]}:",
        RUNLEDGER_REDIS_BUDGET_MS=str(int(BUDGET_S * 1000)),
        EVENT_RETRY_DELAYS_S="0.5,1,2",
        EVENT_RETRY_JITTER="0.2",
        EVENT_SHUTDOWN_GRACE_S="8",
    )
    try:
        init_store(Settings(database_url=url))
        with bootstrap(Settings(database_url=url), Registry()) as rl:
            drill = Drill(plan, rl, folder, env)
            try:
                drill.play()
                drill.settle()
            finally:
                drill.runners.end()
                drill.people.wait(timeout=30)
            findings, ledger = drill.audit()
    finally:
        if postgres:
            drop_pg_url(plan.pg_admin, url)
        _forget_keys(plan.redis_url, env["RUNLEDGER_REDIS_PREFIX"])
    return Result(
        plan=plan,
        tally=drill.tally,
        faults=drill.faults,
        game_master=drill.gm,
        findings=findings,
        ledger=ledger,
        retries=drill.people.asked,
        exits=drill.people.exits,
        died=drill.runners.died,
        seconds=time.monotonic() - started,
        settled_s=drill.settled_s,
        folder=folder,
    )


def _forget_keys(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)

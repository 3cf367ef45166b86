"""The world itself, read straight from its tables and keys, held against what the ledger shows.

The sandbox's SQLite file (``things``, ``props``, ``calls``) and the Redis keys under the drill's
prefix are read directly, never through a module: a module that is wrong about the world must
not be the witness. The ledger is read through its own read side. Four disagreements count:

- a **lost thing**: alive in the world, and no entry of the run whose key made it shows it
  left (unresolved, or kept by a person);
- a **lost lease value**: a target holding neither what its owner last set (its value before the
  drill, or a game master's since) nor a value some run shows it left there (an entry on it
  unresolved or kept, of the run whose value it is, or drifted and reporting that value);
- a **repeat**: the sandbox counted more perform, revert or restore calls under a key (or on a
  target) than the ledger recorded claims for: a call beyond the one in flight at a claim;
- a **stuck run**: still running, or with cleanup ``pending``, once the drill has settled.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import redis

from runledger.application.runledger import Runledger
from runledger.domain.fate import UNRESOLVED
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND, Resource
from runledger.domain.step import Step
from runledger.projections.queries import EntryRow, RunRow

SHOWN = UNRESOLVED | {"kept"}  # left in the world, and the run says so
SANDBOX_DEFAULTS = {"weather": "clear", "spawn_rate": 1.0}


@dataclass(frozen=True)
class Target:
    """A lease target of the drill's pool, and the value it held before the drill."""

    lease: str  # sandbox.weather, sandbox.spawn_rate or redis.string
    target: str
    before: Any

    @property
    def ref(self) -> str:
        return f"{self.lease}#{self.target}"

    @property
    def prop(self) -> str:
        """The sandbox's own name for it in ``props``."""
        return f"{self.lease.rpartition('.')[2]}:{self.target}"


@dataclass
class WorldNow:
    """What the world holds now: things by (module, ref) with the key that made each, each
    target's value, and the sandbox's count of calls by (op, key)."""

    things: dict[tuple[str, str], str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    calls: dict[tuple[str, str], int] = field(default_factory=dict)


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """The world's file, read as any process may: a plain read waits for no write lock (and
    rolls back what a process killed in the middle of a write left)."""
    db = sqlite3.connect(path, timeout=30)
    try:
        yield db
    finally:
        db.close()


def read_world(
    sandbox: Path, client: redis.Redis, prefix: str, kinds: list[str], targets: list[Target]
) -> WorldNow:
    world = WorldNow()
    with reading(sandbox) as db:
        for ref, key in db.execute("SELECT ref, key FROM things"):
            world.things["sandbox", ref] = key
        props = {t: json.loads(v) for t, v in db.execute("SELECT target, value FROM props")}
        for op, key, count in db.execute("SELECT op, key, count FROM calls"):
            world.calls[op, key] = int(count)
    for pattern in [f"{prefix}{kind}:*" for kind in kinds]:
        for name in client.scan_iter(match=pattern):
            made_by = client.get(name)
            if made_by is not None:
                world.things["redis", str(name)] = str(made_by)
    for t in targets:
        if t.lease.startswith("sandbox."):
            world.values[t.ref] = props.get(t.prop, SANDBOX_DEFAULTS.get(t.prop.partition(":")[0]))
        else:
            world.values[t.ref] = client.get(t.target)
    return world


@dataclass
class Ledger:
    """What the ledger shows, through its read side, and the claims its events record."""

    runs: dict[UUID, RunRow]
    entries: dict[UUID, list[EntryRow]]
    revert_claims: dict[UUID, list[tuple[str, float]]]  # entry -> (worker, when) of each claim
    dispatch_claims: Counter[UUID]  # step aggregate -> its DispatchClaimed events
    log_kinds: Counter[str]
    late: list[dict[str, Any]]  # the detail of every log line that says an answer came late


def read_ledger(rl: Runledger, run_ids: list[UUID]) -> Ledger:
    rl.projector.catch_up()
    now, most = rl.clock(), rl.settings.max_revert_attempts
    runs = {r.run_id: r for r in rl.queries.runs(run_ids, now, most)}
    entries = {run: rl.queries.entries(run) for run in run_ids}
    revert_claims: dict[UUID, list[tuple[str, float]]] = defaultdict(list)
    dispatch_claims: Counter[UUID] = Counter()
    start = 0
    while True:
        notes = rl.app.recorder.select_notifications(start, 1000, inclusive_of_start=False)
        for note in notes:
            if note.topic.endswith(("RevertClaimed", "DispatchClaimed")):
                event: Any = rl.app.mapper.to_domain_event(note)
                if isinstance(event, Resource.RevertClaimed):
                    claims = revert_claims[event.originator_id]
                    claims.append((event.worker, event.at.timestamp()))
                elif isinstance(event, Step.DispatchClaimed):
                    dispatch_claims[event.originator_id] += 1
        if len(notes) < 1000:
            break
        start = notes[-1].id
    kinds: Counter[str] = Counter()
    late = []
    for run in run_ids:
        for line in rl.queries.log(run):
            kinds[line.kind] += 1
            if "late" in line.kind:
                late.append(line.detail)
    return Ledger(runs, entries, revert_claims, dispatch_claims, kinds, late)


@dataclass
class Findings:
    lost_things: list[str] = field(default_factory=list)
    lost_values: list[str] = field(default_factory=list)
    repeats: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "lost things": len(self.lost_things),
            "lost lease values": len(self.lost_values),
            "repeats beyond the call in flight": len(self.repeats),
            "stuck runs": len(self.stuck),
        }


@dataclass(frozen=True)
class Leased:
    """What the drill knows of its own lease steps, which the ledger cannot say for itself."""

    keys: dict[str, str]  # a core.lease step's key -> the ref of the target it leases
    holders: dict[str, UUID]  # each run's own lease value, as repr -> the run (one per run)


def compare(
    world: WorldNow, ledger: Ledger, targets: list[Target], owners: dict[str, Any], leased: Leased
) -> Findings:
    """``owners``: each target's ref -> the value its owner last set (before the drill, or a
    game master's since)."""
    found = Findings()
    by_key = defaultdict(list)
    on_target = defaultdict(list)
    for rows in ledger.entries.values():
        for e in rows:
            by_key[e.idempotency_key].append(e)
            ref = e.ref if e.kind == LEASE_KIND else leased.keys.get(e.ref)
            if ref is not None and e.kind in (LEASE_KIND, PLACEHOLDER_KIND):
                on_target[ref].append(e)
    _things(found, world, ledger, by_key)
    for t in targets:
        now, owner = world.values.get(t.ref), owners.get(t.ref, t.before)
        entries = on_target[t.ref]
        if now != owner and not any(_explains(e, now, leased) for e in entries):
            found.lost_values.append(
                f"{t.ref} holds {now!r}, its owner's {owner!r}: {_lost(entries, ledger)}"
            )
    _repeats(found, world, ledger, by_key, on_target, {t.target: t for t in targets})
    for run_id in ledger.entries:
        row = ledger.runs.get(run_id)
        if row is None:
            found.stuck.append(f"run {run_id} was started and the ledger does not show it")
        elif row.status == "running" or row.cleanup_status == "pending":
            found.stuck.append(f"run {run_id} {row.status}, cleanup {row.cleanup_status}")
    return found


def _explains(entry: EntryRow, now: Any, leased: Leased) -> bool:
    """A lease entry shown left explains the value there now when that value is its own run's
    (kept, failing, or an apply whose answer never came), or the one its drift reports."""
    if entry.status not in SHOWN:
        return False
    if entry.status == "drifted" and entry.drift_current == now:
        return True
    return leased.holders.get(repr(now)) == entry.run_id


def _things(
    found: Findings, world: WorldNow, ledger: Ledger, by_key: dict[str, list[EntryRow]]
) -> None:
    for (module, ref), key in sorted(world.things.items()):
        covering = [
            e
            for e in by_key.get(key, [])
            if e.kind == PLACEHOLDER_KIND or (e.ref == ref and e.module == module)
        ]
        if any(e.status in SHOWN for e in covering):
            continue
        run = ledger.runs.get(_run_of(key))
        said = f"run {run.status}, cleanup {run.cleanup_status}" if run else "no such run"
        shown = "; ".join(_entry(e, ledger) for e in covering) or "no entry names it"
        found.lost_things.append(f"{module} {ref} made under {key} is alive ({said}): {shown}")


def _repeats(
    found: Findings,
    world: WorldNow,
    ledger: Ledger,
    by_key: dict[str, list[EntryRow]],
    on_target: dict[str, list[EntryRow]],
    targets: dict[str, Target],
) -> None:
    for (op, key), count in sorted(world.calls.items()):
        call, _, name = op.partition(":")
        if call in ("perform", "apply"):  # an apply is its lease step's perform
            allowed = ledger.dispatch_claims[Step.create_id(_run_of(key), key.partition(":")[2])]
        elif call == "revert":
            allowed = _calls_claimed(by_key.get(key, []), ledger)
        elif call == "restore" and key in targets:
            allowed = _calls_claimed(on_target[f"{name}#{key}"], ledger)
        elif call == "restore":
            allowed = _calls_claimed(by_key.get(key, []), ledger)
        else:
            continue  # a call the ledger records no claim for
        if count > allowed:
            found.repeats.append(f"{op} {key}: {count} calls, {allowed} claimed")


def _calls_claimed(entries: list[EntryRow], ledger: Ledger) -> int:
    """How many calls the claims on these entries allow: a group's entries are claimed in one
    save, by one worker at one moment, for one call."""
    return len({claim for e in entries for claim in ledger.revert_claims[e.entry_id]})


def _lost(entries: list[EntryRow], ledger: Ledger) -> str:
    """The entries on a target, the last few, and any whose baseline is its own value."""
    own = [e for e in entries if isinstance(e.payload, dict) and _own(e.payload)]
    last = [e for e in entries[-3:] if e not in own]
    shown = "; ".join(_entry(e, ledger) for e in [*own, *last]) or "no entries"
    hint = f"{len(own)} override(s) took their own value as the baseline; " if own else ""
    return f"{len(entries)} entries; {hint}{shown}"


def _own(payload: dict[str, Any]) -> bool:
    return "baseline" in payload and payload.get("baseline") == payload.get("applied")


def _run_of(key: str) -> UUID:
    try:
        return UUID(key.partition(":")[0])
    except ValueError:
        return UUID(int=0)


def _entry(e: EntryRow, ledger: Ledger) -> str:
    claims = ledger.revert_claims.get(e.entry_id, [])
    payload = f" {e.payload}" if e.kind == LEASE_KIND else ""
    return f"{e.kind}:{e.ref} of run {e.run_id} {e.status} ({len(claims)} claims){payload}"

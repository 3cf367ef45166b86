"""The world as a runner module's calls file tells it, held against what the ledger says.

``scripts/drills/runner_proc.py`` writes one line per perform and revert call at the moment the
call changes the world, so the calls file is the world's own history; the event store says what
core decided. ``CalledWorld`` replays the first; ``audit`` holds the two against each other, call by
call.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any
from uuid import UUID

from runledger.domain.resource import PLACEHOLDER_KIND, Resource
from runledger.domain.step import Step
from runledger.projections.queries import EntryRow, RunRow

RESOLVED = frozenset({"reverted", "superseded", "expired", "kept"})
Calls = list[dict[str, Any]]
Histories = dict[UUID, list[Any]]


@dataclass
class CalledWorld:
    """The world as the calls file tells it: what is there now, and every give-back."""

    alive: set[str] = field(default_factory=set)
    made: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    given_back: Counter[str] = field(default_factory=Counter)
    performs: Counter[str] = field(default_factory=Counter)
    ok_performs: Counter[str] = field(default_factory=Counter)

    def replay(self, calls: list[dict[str, Any]]) -> CalledWorld:
        for call in calls:
            key = call["key"]
            if call["call"] == "perform":
                self.performs[key] += 1
                self.ok_performs[key] += call["outcome"] == "ok"
                self.alive |= set(call["refs"])
                self.made[key] |= set(call["refs"])
            elif call["outcome"] in ("ok", "partial"):
                # No resources named: the module gives back whatever it made under the key.
                named = set(call["refs"]) - set(call.get("failed", []))
                back = named if call["refs"] else set(self.made[key]) & self.alive
                self.given_back.update(back)
                self.alive -= back
        return self


@dataclass
class Attempts:
    """One entry's (or one step's) attempts as core recorded them, and the calls made for them."""

    claims: list[tuple[float, str, int]]  # when, by which worker, which attempt
    verdicts: dict[int, str]  # attempt -> "retry", "terminal", "done" or "drifted"
    calls: list[int] = field(default_factory=list)  # lines of the calls file, in order
    attempt_of: dict[int, int | None] = field(default_factory=dict)

    def match(self, lines: Calls) -> list[int]:
        """A call belongs to its worker's latest claim before it; answers the calls with none."""
        unclaimed = []
        for index in self.calls:
            line = lines[index]
            mine = [(at, n) for at, w, n in self.claims if w == line["worker"] and at <= line["t"]]
            attempt = max(mine)[1] if mine else None
            if attempt is None or attempt in self.attempt_of.values():
                unclaimed.append(index)
                attempt = None
            self.attempt_of[index] = attempt
        return unclaimed

    def verdict_of(self, index: int) -> str | None:
        attempt = self.attempt_of.get(index)
        return None if attempt is None else self.verdicts.get(attempt)

    def uncalled(self) -> list[tuple[float, str, int]]:
        return [c for c in self.claims if c[2] not in self.attempt_of.values()]


def entry_attempts(events: list[Any]) -> Attempts:
    claims = [
        (e.at.timestamp(), e.worker, e.attempt)
        for e in events
        if isinstance(e, Resource.RevertClaimed)
    ]
    verdicts: dict[int, str] = {}
    for e in events:
        if isinstance(e, Resource.Reverted):
            verdicts[e.attempt] = "done"
        elif isinstance(e, Resource.RevertFailed):
            verdicts[e.attempt] = e.mode
        elif isinstance(e, Resource.Drifted):
            verdicts[e.attempt] = "drifted"
    return Attempts(claims, verdicts)


def step_attempts(events: list[Any]) -> Attempts:
    claims = [
        (e.at.timestamp(), e.worker, e.attempt)
        for e in events
        if isinstance(e, Step.DispatchClaimed)
    ]
    verdicts: dict[int, str] = {}
    for e in events:
        if isinstance(e, Step.Succeeded):
            verdicts[e.attempt] = "done"
        elif isinstance(e, Step.Failed):
            verdicts[e.attempt] = "terminal" if e.final else "retry"
    return Attempts(claims, verdicts)


@dataclass
class Audit:
    """What the world and the ledger say together; ``problems`` are where they disagree."""

    lines: Calls
    killed: set[str]
    in_flight: set[int] = field(init=False)  # the last call of each killed runner
    repeats: set[int] = field(default_factory=set)  # calls made again after a saved verdict
    repeated_entries: int = 0  # entries those calls covered again
    in_flight_repeats: int = 0  # after a call in flight when its runner was killed
    lost_verdict_repeats: int = 0  # after a live runner's verdict came too late to be saved
    attempts: int = 0
    entry_calls: int = 0
    uncalled: list[str] = field(default_factory=list)  # beyond one group in flight per kill
    outage_casualties: list[UUID] = field(default_factory=list)  # incomplete runs, outages alone
    outage_aborts: list[UUID] = field(default_factory=list)  # aborted runs, outages alone
    stale: int = 0  # unresolved in the ledger, given back by a call whose verdict was lost
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        last = {line["worker"]: i for i, line in enumerate(self.lines)}
        self.in_flight = {i for worker, i in last.items() if worker in self.killed}

    def count(self, what: str, outage: bool | None = None) -> int:
        return sum(
            1
            for c in self.lines
            if c["call"] == what and (outage is None or c.get("outage", False) == outage)
        )

    def repeated_keys(self) -> set[str]:
        return {self.lines[i]["key"] for i in self.repeats}

    def judge_repeats(self, attempts: Attempts) -> None:
        """A call may follow a retry verdict, or a verdict its runner never saved because it
        was killed (or too slow) while that call was in flight; any other is a repeat."""
        for before, after in pairwise(attempts.calls):
            verdict = attempts.verdict_of(before)
            if verdict == "retry":
                continue
            if verdict is None and before in self.in_flight:
                self.in_flight_repeats += 1
            elif verdict is None and self.lines[before]["worker"] not in self.killed:
                self.lost_verdict_repeats += 1
            else:
                self.repeats.add(after)
                self.repeated_entries += 1

    def match(self, attempts: Attempts, what: str) -> None:
        for index in attempts.match(self.lines):
            line = self.lines[index]
            self.problems.append(f"{line['worker']} called {what} with no claim of its own")

    def only_outages(self, attempts: Attempts) -> bool:
        """Every attempt was a call that met an outage and was judged worth retrying."""
        called = {n: i for i, n in attempts.attempt_of.items() if n is not None}
        return bool(attempts.claims) and all(
            n in called
            and self.lines[called[n]].get("outage", False)
            and attempts.verdicts.get(n) == "retry"
            for _, _, n in attempts.claims
        )


def audit(
    lines: Calls,
    found: Histories,
    entries: list[EntryRow],
    rows: dict[UUID, RunRow],
    killed: set[str],
) -> Audit:
    """Hold the calls file against the store, entry by entry and step by step."""
    result = Audit(lines, killed)
    steps = _perform_attempts(result, found)
    per_entry = _revert_attempts(result, found, entries)
    _world_against_ledger(result, CalledWorld().replay(lines), entries, per_entry)
    _uncalled(result, entries, per_entry)
    for run_id, row in rows.items():
        left = [e for e in entries if e.run_id == run_id and e.status not in RESOLVED]
        if (
            row.cleanup_status == "incomplete"
            and left
            and all(result.only_outages(per_entry[e.entry_id]) for e in left)
        ):
            result.outage_casualties.append(run_id)
        failed = [
            a
            for key, a in steps.items()
            if key.startswith(f"{run_id}:") and a.claims and "done" not in a.verdicts.values()
        ]
        if row.status == "aborted" and failed and all(result.only_outages(a) for a in failed):
            result.outage_aborts.append(run_id)
    return result


def _perform_attempts(result: Audit, found: Histories) -> dict[str, Attempts]:
    steps: dict[str, Attempts] = {}
    for events in found.values():
        if events and isinstance(events[0], Step.Planned):
            steps[f"{events[0].run_id}:{events[0].step_id}"] = step_attempts(events)
            if sum(isinstance(e, Step.Succeeded) for e in events) > 1:
                result.problems.append(f"step {events[0].step_id} succeeded twice")
    for index, line in enumerate(result.lines):
        if line["call"] != "perform":
            continue
        if line["key"] in steps:
            steps[line["key"]].calls.append(index)
        else:
            result.problems.append(f"a perform under {line['key']}, which no step has")
    for key, attempts in steps.items():
        result.match(attempts, f"perform {key}")
        result.judge_repeats(attempts)
    return steps


def _revert_attempts(
    result: Audit, found: Histories, entries: list[EntryRow]
) -> dict[UUID, Attempts]:
    per_entry = {e.entry_id: entry_attempts(found[e.entry_id]) for e in entries}
    by_ref = {e.ref: e.entry_id for e in entries if e.kind != PLACEHOLDER_KIND}
    by_key = {e.ref: e.entry_id for e in entries if e.kind == PLACEHOLDER_KIND}
    for index, line in enumerate(result.lines):
        if line["call"] != "revert":
            continue
        # No refs: the placeholder's call, which asks for whatever was made under the key.
        for ref in line["refs"] or [line["key"]]:
            entry_id = by_ref.get(ref) if line["refs"] else by_key.get(ref)
            if entry_id is None:
                result.problems.append(f"a revert of {ref}, which the ledger never recorded")
            else:
                per_entry[entry_id].calls.append(index)
    for entry in entries:
        attempts = per_entry[entry.entry_id]
        result.match(attempts, f"revert {entry.name}")
        result.judge_repeats(attempts)
        result.attempts += len(attempts.claims)
        result.entry_calls += len(attempts.calls)
        if sum(isinstance(e, Resource.Reverted) for e in found[entry.entry_id]) > 1:
            result.problems.append(f"{entry.name} was reverted twice")
    return per_entry


def _world_against_ledger(
    result: Audit, world: CalledWorld, entries: list[EntryRow], per_entry: dict[UUID, Attempts]
) -> None:
    """What is alive in the world is exactly what the ledger shows as unresolved."""
    left = [e for e in entries if e.status not in RESOLVED]
    left_named = {e.ref: per_entry[e.entry_id] for e in left if e.kind != PLACEHOLDER_KIND}
    under_keys = {r for e in left if e.kind == PLACEHOLDER_KIND for r in world.made[e.ref]}
    for ref in sorted(world.alive - set(left_named) - under_keys):
        result.problems.append(f"{ref} is alive in the world, and the ledger shows it resolved")
    for ref in sorted(set(left_named) - world.alive):
        attempts = left_named[ref]
        gave_back = [
            i
            for i in attempts.calls
            if result.lines[i]["outcome"] in ("ok", "partial")
            and ref not in result.lines[i].get("failed", [])
        ]
        if any(attempts.verdict_of(i) is None for i in gave_back):
            result.stale += 1  # core never heard how the call that gave it back ended
        else:
            result.problems.append(f"{ref} is unresolved in the ledger, and gone from the world")
    for entry in entries:
        if entry.kind != PLACEHOLDER_KIND and entry.ref not in world.made[entry.idempotency_key]:
            result.problems.append(f"the ledger names {entry.ref}, which the world never made")


def _uncalled(result: Audit, entries: list[EntryRow], per_entry: dict[UUID, Attempts]) -> None:
    """Attempts that made no call, beyond the one group a killed runner may have claimed
    and died before calling."""
    uncalled = [
        (at, worker, (entry.idempotency_key, entry.kind == PLACEHOLDER_KIND), entry.name, n)
        for entry in entries
        for at, worker, n in per_entry[entry.entry_id].uncalled()
    ]
    latest: dict[str, tuple[float, tuple[str, bool]]] = {}
    for at, worker, group, _, _ in uncalled:
        if worker in result.killed and (worker not in latest or at > latest[worker][0]):
            latest[worker] = (at, group)
    excused = {(worker, group) for worker, (_, group) in latest.items()}
    result.uncalled = [
        f"attempt {n} of {name} by {worker}{' (killed)' if worker in result.killed else ''}"
        for _, worker, group, name, n in uncalled
        if (worker, group) not in excused
    ]

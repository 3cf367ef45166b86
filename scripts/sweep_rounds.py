"""Given-back history for part 2 of bench_sweep (sweep_history.py), written by real work: runs
recorded through the application and given back by real sweeps (the Cleanup service, the
instant module).

Real work gives back ~1-3 k entries a second here, too slow for the larger size within the
benchmark's budget. So the bulk of a size is written by replaying, round after round with fresh
ids, the projection's own upserts (``backend.upsert``, the statement a catch-up page sends) that a
real round of runs made: the same rows in the same versions, in the same order of statements,
so every row is inserted then updated as the real round did it, and leaves the same dead
tuples. The last part of every size is real work again, on top of the bulk.

What the replay leaves out, as nothing the candidate query reads: the events themselves, and the
rows of the steps and run-log views.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_world import ledger_runs, sweep_until_done

from runledger.application.bootstrap import Runledger

REPLAYED = ("rl_runs", "rl_resources")
"""The views the candidate query reads: the only ones the replay writes."""
TOGETHER = 4
"""Replayed rounds sharing each statement: ~2,000 rows, about what one catch-up page (2,000
events) writes behind that much work."""
TAG = "tpl"
"""The recorded round's runs are named ``tpl-<i>``, its entries' refs ``tpl-<i>-<step>-<j>``."""


@dataclass
class Statement:
    """One upsert a catch-up page sent, kept to the recorded round's rows."""

    table: str
    columns: tuple[str, ...]
    key: str
    rows: list[list[Any]]


@dataclass
class Written:
    """What one stretch of history took: entries and runs, seconds, row writes by table."""

    entries: int = 0
    runs: int = 0
    seconds: float = 0.0
    rows: Counter[str] = field(default_factory=Counter)

    def add(self, other: Written) -> None:
        self.entries += other.entries
        self.runs += other.runs
        self.seconds += other.seconds
        self.rows.update(other.rows)

    def per_entry(self, table: str) -> float:
        return self.rows[table] / max(self.entries, 1)


Upsert = Callable[[Any, str, Sequence[str], str, list[list[Any]]], None]


def watching(rl: Runledger, seen: Callable[[Statement], None]) -> Callable[[], None]:
    """Tell ``seen`` every upsert the views send; answers a function that stops it."""
    backend = rl.backend
    original: Upsert = backend.upsert

    def upsert(
        cursor: Any, table: str, columns: Sequence[str], key: str, rows: list[list[Any]]
    ) -> None:
        original(cursor, table, columns, key, rows)
        seen(Statement(table, tuple(columns), key, rows))

    backend.upsert = upsert  # type: ignore[method-assign]
    return lambda: delattr(backend, "upsert")


def real_round(rl: Runledger, runs: int, entries: int, per_step: int, tag: str) -> Written:
    """Runs recorded through the application, then swept until nothing is left to give back."""
    written = Written(entries=runs * entries, runs=runs)

    def seen(statement: Statement) -> None:
        written.rows[statement.table] += len(statement.rows)

    stop = watching(rl, seen)
    start = time.perf_counter()
    try:
        ledger_runs(rl, runs, entries, per_step, tag)
        sweep_until_done(rl)
        rl.projector.catch_up()
    finally:
        stop()
    written.seconds = time.perf_counter() - start
    return written


def real_work(rl: Runledger, runs: int, batch: int, args: Any, tag: str) -> Written:
    """``runs`` runs through the application, ``batch`` at a time, each batch swept before the
    next is recorded: work given back as it comes, not all at once."""
    written = Written()
    for first in range(0, runs, batch):
        count = min(batch, runs - first)
        written.add(real_round(rl, count, args.entries, args.per_step, f"{tag}{first}"))
    return written


def record_round(rl: Runledger, runs: int, args: Any) -> tuple[list[Statement], Written]:
    """A real round of ``runs`` runs, and the upserts of its rows the views sent, in order."""
    sent: list[Statement] = []
    stop = watching(rl, sent.append)
    try:
        start = time.perf_counter()
        ids = {str(r) for r in ledger_runs(rl, runs, args.entries, args.per_step, TAG)}
        sweep_until_done(rl)
        rl.projector.catch_up()
        seconds = time.perf_counter() - start
    finally:
        stop()
    written = Written(runs * args.entries, runs, seconds)
    statements = []
    for s in sent:
        written.rows[s.table] += len(s.rows)
        if s.table in REPLAYED:
            at = s.columns.index("run_id")
            mine = [list(row) for row in s.rows if row[at] in ids]
            if mine:
                statements.append(Statement(s.table, s.columns, s.key, mine))
    return statements, written


Plan = list[tuple[int, str, str]]
"""The cells of a recorded row a round renames: (column, how, the run id a text holds); how is
"time" (moved), "id" (a fresh id) or "text" (the run's id and the round's tag replaced)."""


def is_id(value: str) -> bool:
    return len(value) == 36 and value.count("-") == 4


@dataclass
class Replay:
    """The recorded round's upserts, sent again for rounds of fresh runs."""

    statements: list[tuple[Statement, list[Plan]]]
    run_ids: list[str]
    entries_per_run: int

    @classmethod
    def of(cls, statements: list[Statement], entries_per_run: int) -> Replay:
        runs = [s for s in statements if s.table == "rl_runs"]
        ids = sorted({row[s.columns.index("run_id")] for s in runs for row in s.rows})

        def plan(row: list[Any]) -> Plan:
            found: Plan = []
            for i, value in enumerate(row):
                if type(value) is float and value > 1e9:
                    found.append((i, "time", ""))
                elif type(value) is str and is_id(value):
                    found.append((i, "id", ""))
                elif type(value) is str:
                    held = [r for r in ids if r in value]
                    if held or f"{TAG}-" in value:
                        found.append((i, "text", held[0] if held else ""))
            return found

        return cls([(s, [plan(row) for row in s.rows]) for s in statements], ids, entries_per_run)

    def renaming(self, round_no: int, shift: float) -> Callable[[list[Any], Plan], list[Any]]:
        """A function renaming a recorded row into round ``round_no``: fresh run and entry ids
        (uuid4-shaped, spread over the key space), fresh names and refs, times moved ``shift``
        seconds."""
        draw = random.Random(f"history{round_no}").getrandbits
        names: dict[str, str] = {}

        def fresh(value: str) -> str:
            if value not in names:
                names[value] = str(uuid.UUID(int=draw(128), version=4))
            return names[value]

        for run in self.run_ids:
            fresh(run)
        prefix = f"h{round_no}-"

        def renamed(row: list[Any], plan: Plan) -> list[Any]:
            new = row.copy()
            for i, how, run in plan:
                value = new[i]
                if how == "time":
                    new[i] = value + shift
                elif how == "id":
                    new[i] = fresh(value)
                else:
                    held = value.replace(run, names[run]) if run else value
                    new[i] = held.replace(f"{TAG}-", prefix)
            return new

        return renamed

    def send(self, rl: Runledger, rounds: int, first: int, together: int = TOGETHER) -> Written:
        """``rounds`` rounds, the oldest first, each a minute after the one before and all of
        them before the recording. ``together`` rounds share each statement (a page holding
        more runs, as a catch-up behind more work reads), in one transaction."""
        runs = rounds * len(self.run_ids)
        written = Written(runs * self.entries_per_run, runs)
        backend = rl.backend
        start = time.perf_counter()
        for n in range(0, rounds, together):
            renames = [
                self.renaming(first + k, -60.0 * (rounds - k))
                for k in range(n, min(n + together, rounds))
            ]
            with backend.transaction(commit=True) as cursor:
                for s, plans in self.statements:
                    rows = [
                        renamed(row, plan)
                        for renamed in renames
                        for row, plan in zip(s.rows, plans, strict=True)
                    ]
                    backend.upsert(cursor, s.table, s.columns, s.key, rows)
                    written.rows[s.table] += len(rows)
        written.seconds = time.perf_counter() - start
        return written

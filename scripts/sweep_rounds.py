"""Given-back history for part 2 of bench_sweep (sweep_history.py), written by real work: runs
recorded through the application and given back by real sweeps (the Cleanup service, the
instant module).

Real work gives back ~0.5-2 k entries a second here, too slow for the larger size within the
benchmark's budget. So the bulk of a size replays, round after round with fresh ids, what a real
round of runs sent to the two tables the candidate query reads: the views' upserts
(``backend.upsert``, as a catch-up page sends them), so that every row is inserted then updated
in the same versions and leaves the same dead tuples, and the reads. The reads matter on
PostgreSQL: an index scan marks the index entries of dead rows it meets, and a page split then
drops them, so the open-entries index keeps fewer dead entries than the writes alone leave (at
20,000 given back: ~4,500 of them after real work, ~20,000 after a replay of the writes only).
The last part of every size is real work again.

What the replay leaves out, as nothing the candidate query reads: the events themselves, and the
rows of the steps, run-log and tracking tables.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from runledger.application.runledger import Runledger
from scripts.sweep_world import ledger_runs, sweep_until_done

REPLAYED = ("rl_runs", "rl_resources")
"""The views the candidate query reads: the only tables the replay writes and reads."""
TAG = "tpl"
"""The recorded round's runs are named ``tpl-<i>``, its entries' refs ``tpl-<i>-<step>-<j>``."""


@dataclass
class Upsert:
    """One upsert of a view's rows, as a catch-up page sent it."""

    table: str
    columns: tuple[str, ...]
    key: str
    rows: list[list[Any]]


@dataclass
class Read:
    """One read of the replayed tables: its statement as the engine got it, and parameters."""

    statement: str
    params: list[Any]
    by_index: bool = False
    """Sent after ``SET LOCAL enable_bitmapscan = off`` (projections/postgres.py), as again."""


BY_INDEX = "SET LOCAL enable_bitmapscan = off"

Sent = tuple[int, Upsert | Read]
"""A statement and the number of the transaction it was sent in."""


@dataclass
class Written:
    """What one stretch of history took: entries and runs, seconds, row writes by table, and
    reads of the replayed tables."""

    entries: int = 0
    runs: int = 0
    seconds: float = 0.0
    rows: Counter[str] = field(default_factory=Counter)
    reads: int = 0

    def add(self, other: Written) -> None:
        self.entries += other.entries
        self.runs += other.runs
        self.seconds += other.seconds
        self.rows.update(other.rows)
        self.reads += other.reads

    def count(self, item: Upsert | Read) -> None:
        if isinstance(item, Read):
            self.reads += 1
        else:
            self.rows[item.table] += len(item.rows)

    def per_entry(self, table: str) -> float:
        return self.rows[table] / max(self.entries, 1)


def reads_replayed(statement: Any) -> bool:
    if not isinstance(statement, str):
        return False  # composed statements read the events
    text = statement.lstrip()[:6].upper()
    return text == "SELECT" and any(t in statement for t in REPLAYED)


class Spy:
    """A cursor that tells what it reads from the replayed tables; everything else passes."""

    def __init__(self, cursor: Any, txn: int, seen: Callable[[int, Upsert | Read], None]):
        self.cursor, self.txn, self.seen = cursor, txn, seen
        self.by_index = False

    def execute(self, statement: Any, params: Any = None) -> Any:
        if reads_replayed(statement):
            self.seen(self.txn, Read(statement, list(params or []), self.by_index))
        self.by_index = statement == BY_INDEX
        if params is None:
            return self.cursor.execute(statement)
        return self.cursor.execute(statement, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)


def watching(rl: Runledger, seen: Callable[[int, Upsert | Read], None]) -> Callable[[], None]:
    """Tell ``seen`` every upsert the views send and every read of the replayed tables, with
    its transaction's number; answers a function that stops it."""
    backend = rl.backend
    transaction, upsert = backend.transaction, backend.upsert
    numbers = itertools.count()

    @contextlib.contextmanager
    def watched(*, commit: bool) -> Iterator[Any]:
        with transaction(commit=commit) as cursor:
            yield Spy(cursor, next(numbers), seen)

    def told(cursor: Any, table: str, columns: Sequence[str], key: str, rows: Any) -> None:
        upsert(cursor, table, columns, key, rows)
        seen(getattr(cursor, "txn", -1), Upsert(table, tuple(columns), key, rows))

    backend.transaction = watched  # type: ignore[method-assign]
    backend.upsert = told  # type: ignore[method-assign]

    def stop() -> None:
        del backend.transaction
        del backend.upsert

    return stop


def real_round(rl: Runledger, runs: int, args: Any, tag: str, sent: list[Sent]) -> Written:
    """Runs recorded through the application, then swept until nothing is left to give back;
    what they sent is added to ``sent``."""
    written = Written(entries=runs * args.entries, runs=runs)

    def seen(txn: int, item: Upsert | Read) -> None:
        if isinstance(item, Read) or item.table in REPLAYED:
            sent.append((txn, item))
        written.count(item)

    stop = watching(rl, seen)
    start = time.perf_counter()
    try:
        ledger_runs(rl, runs, args.entries, args.per_step, tag)
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
        written.add(real_round(rl, count, args, f"{tag}{first}", []))
    return written


Plan = list[tuple[int, str, str]]
"""The values of a recorded row or parameter list a round renames: (position, how, the run id
a text holds); how is "time" (moved), "id" (a fresh id) or "text" (run id and tag replaced)."""


def is_id(value: Any) -> bool:
    if isinstance(value, uuid.UUID):
        return True
    return type(value) is str and len(value) == 36 and value.count("-") == 4


@dataclass
class Replay:
    """A real round's statements, sent again for rounds of fresh runs."""

    sent: list[tuple[int, Upsert | Read, list[Plan]]]
    run_ids: list[str]
    entries_per_run: int

    @classmethod
    def of(cls, sent: list[Sent], entries_per_run: int) -> Replay:
        ids = sorted(
            {
                str(row[item.columns.index("run_id")])
                for _, item in sent
                if isinstance(item, Upsert) and item.table == "rl_runs"
                for row in item.rows
            }
        )

        def plan(values: Sequence[Any]) -> Plan:
            found: Plan = []
            for i, value in enumerate(values):
                if type(value) is float and value > 1e9:
                    found.append((i, "time", ""))
                elif is_id(value):
                    found.append((i, "id", ""))
                elif type(value) is str:
                    held = [r for r in ids if r in value]
                    if held or f"{TAG}-" in value:
                        found.append((i, "text", held[0] if held else ""))
            return found

        def plans(item: Upsert | Read) -> list[Plan]:
            return [plan(item.params)] if isinstance(item, Read) else [plan(r) for r in item.rows]

        return cls([(txn, item, plans(item)) for txn, item in sent], ids, entries_per_run)

    def renaming(self, round_no: int, shift: float) -> Callable[[list[Any], Plan], list[Any]]:
        """A function renaming a recorded row or parameter list into round ``round_no``: fresh
        run and entry ids (uuid4-shaped, spread over the key space), fresh names and refs, times
        moved ``shift`` seconds."""
        draw = random.Random(f"history{round_no}").getrandbits
        names: dict[str, str] = {}

        def fresh(value: Any) -> str:
            key = str(value)
            if key not in names:
                names[key] = str(uuid.UUID(int=draw(128), version=4))
            return names[key]

        for run in self.run_ids:
            fresh(run)
        prefix = f"h{round_no}-"

        def renamed(values: list[Any], plan: Plan) -> list[Any]:
            new = list(values)
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

    def send(
        self,
        rl: Runledger,
        rounds: int,
        first: int,
        together: int = 1,
        reads: Callable[[str], bool] = lambda _: True,
    ) -> Written:
        """``rounds`` rounds, the oldest first, each a minute after the one before and all of
        them before the recording; each recorded transaction one transaction again.

        ``together`` rounds share each upsert (a bigger page); the reads kept (``reads``) are
        sent once for them, with the last one's names and times."""
        runs = rounds * len(self.run_ids)
        written = Written(runs * self.entries_per_run, runs)
        groups = [
            kept
            for _, group in itertools.groupby(self.sent, key=lambda s: s[0])
            if (
                kept := [(i, p) for _, i, p in group if isinstance(i, Upsert) or reads(i.statement)]
            )
        ]
        backend = rl.backend
        start = time.perf_counter()
        for n in range(0, rounds, together):
            names = [
                self.renaming(first + k, -60.0 * (rounds - k))
                for k in range(n, min(n + together, rounds))
            ]
            for group in groups:
                writes = any(isinstance(item, Upsert) for item, _ in group)
                with backend.transaction(commit=writes) as cursor:
                    for item, plans in group:
                        if isinstance(item, Read):
                            if item.by_index:
                                cursor.execute(BY_INDEX)
                            cursor.execute(item.statement, names[-1](item.params, plans[0]))
                            cursor.fetchall()
                            written.reads += 1
                            continue
                        rows = [
                            renamed(row, plan)
                            for renamed in names
                            for row, plan in zip(item.rows, plans, strict=True)
                        ]
                        backend.upsert(cursor, item.table, item.columns, item.key, rows)
                        written.rows[item.table] += len(rows)
        written.seconds = time.perf_counter() - start
        return written

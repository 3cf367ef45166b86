"""The counts view: how many runs there are by status and class, and how many unresolved entries
by state, kept by the database itself in the same transaction as the rows it counts.

Not an event view. Triggers on rl_runs and rl_resources move the counts whenever a row moves,
whoever writes it (the projector, a rebuild's catch-up); a rebuild's swap and ``runledger init``
count everything again under a lock (``create``), so a count never drifts from its rows.

What can be kept exactly is what the rows alone say. A run's cleanup status
(domain/status.py) also depends on the clock and on the setting of attempts: an entry with
attempts left, or under a live claim, keeps its run ``pending``. So each run is kept in one of
four classes, by its rows alone:

- ``none``: no entries, so ``not_required``;
- ``complete`` / ``incomplete``: nothing automatic cleanup could still work (no entry open and
  not terminal), so the status is exact whatever the time (and ``pending`` while it runs);
- ``open``: some entry is open and not terminal. Whether it still has attempts left or a live
  claim is a question of the setting and of now: those runs (the ones cleanup is working, and
  those that used their attempts) are judged at read time, from the open-entries index.
"""

from __future__ import annotations

from typing import Any

from runledger.domain.fate import OPEN, UNRESOLVED
from runledger.projections.backend import Backend, Cursor
from runledger.projections.schema import any_of

COUNTS = "rl_counts"
TALLY = "rl_run_tally"
COUNTED = ("rl_runs", "rl_resources")
TRIGGER = "rl_counted"
"""Every trigger's name starts so (``missing`` looks for them)."""


def klass(entries: str, unresolved: str, openish: str) -> str:
    """A run's class from its tally (NULL entries: it has none)."""
    return f"""CASE WHEN COALESCE({entries}, 0) = 0 THEN 'none' WHEN {openish} > 0 THEN 'open'
        WHEN {unresolved} = 0 THEN 'complete' ELSE 'incomplete' END"""


def tallied(t: str) -> str:
    """The class of the run whose tally row is ``t``."""
    return klass(f"{t}.entries", f"{t}.unresolved", f"{t}.openish")


def unresolved(row: str) -> str:
    return f"CASE WHEN {any_of(UNRESOLVED, f'{row}.status')} THEN 1 ELSE 0 END"


def openish(row: str) -> str:
    return f"CASE WHEN {any_of(OPEN, f'{row}.status')} AND {row}.terminal = 0 THEN 1 ELSE 0 END"


def tables(b: Backend) -> list[str]:
    # The tally holds each run's status beside its entries' counts (NULL: no run row yet), so
    # that a trigger on one counted table never reads the other: a rebuild swaps them one at a
    # time, and SQLite checks every trigger's tables when a table is renamed.
    return [
        f"""CREATE TABLE IF NOT EXISTS {b.qualify(TALLY)} (run_id TEXT PRIMARY KEY,
            status TEXT, entries BIGINT NOT NULL, unresolved BIGINT NOT NULL,
            openish BIGINT NOT NULL)""",
        f"""CREATE INDEX IF NOT EXISTS {TALLY}_open ON {b.qualify(TALLY)} (run_id)
            WHERE openish > 0""",
        f"""CREATE TABLE IF NOT EXISTS {b.qualify(COUNTS)} (what TEXT NOT NULL,
            status TEXT NOT NULL, class TEXT NOT NULL, n BIGINT NOT NULL)""",
        f"""CREATE UNIQUE INDEX IF NOT EXISTS {COUNTS}_key ON {b.qualify(COUNTS)}
            (what, status, class)""",
    ]


def recount(b: Backend) -> list[str]:
    """Everything counted again from the rows."""
    tally, counts = b.qualify(TALLY), b.qualify(COUNTS)
    resources = b.qualify("rl_resources")
    return [
        f"DELETE FROM {tally}",
        f"""INSERT INTO {tally} (run_id, status, entries, unresolved, openish)
            SELECT u.run_id, u.status, 0, 0, 0 FROM {b.qualify("rl_runs")} u""",
        f"""INSERT INTO {tally} (run_id, status, entries, unresolved, openish)
            SELECT r.run_id, NULL, COUNT(*), SUM({unresolved("r")}), SUM({openish("r")})
            FROM {resources} r WHERE true GROUP BY r.run_id
            ON CONFLICT (run_id) DO UPDATE SET entries = excluded.entries,
            unresolved = excluded.unresolved, openish = excluded.openish""",
        f"DELETE FROM {counts}",
        f"""INSERT INTO {counts} (what, status, class, n)
            SELECT 'runs', t.status, {tallied("t")}, COUNT(*) FROM {tally} t
            WHERE t.status IS NOT NULL GROUP BY 1, 2, 3""",
        f"""INSERT INTO {counts} (what, status, class, n)
            SELECT 'entries', r.status, '', COUNT(*) FROM {resources} r
            WHERE {any_of(UNRESOLVED, "r.status")} GROUP BY r.status""",
    ]


ADDED = "ON CONFLICT (what, status, class) DO UPDATE SET n = c.n + excluded.n"
"""What an insert into the counts (``AS c``) does to a count that is there: adds to it."""


def create(backend: Backend, cursor: Cursor) -> None:
    """The counts' tables and triggers, and every count made again from the rows, with the
    counted tables locked against writers meanwhile."""
    engine = _engine(backend)
    for statement in tables(backend):
        cursor.execute(statement)
    engine.lock(backend, cursor)
    for statement in engine.triggers(backend):
        cursor.execute(statement)
    for statement in recount(backend):
        cursor.execute(statement)
    for statement in engine.analysed(backend):
        cursor.execute(statement)


def drop(backend: Backend, cursor: Cursor) -> None:
    """The counts' triggers gone (what a store made before them had)."""
    for statement in _engine(backend).drops(backend):
        cursor.execute(statement)


def missing(backend: Backend) -> list[str]:
    """What of the counts an older store lacks, as ``missing_indexes`` names things."""
    engine = _engine(backend)
    names = [f"{TALLY}_open", f"{COUNTS}_key"]
    gone = backend.absent(names)
    wanted = [f"index {n}" for n in names if n in gone]
    with backend.transaction(commit=False) as cursor:
        found = engine.trigger_names(backend, cursor)
    return wanted + [f"trigger {n}" for n in engine.NAMES if n not in found]


def _engine(backend: Backend) -> Any:
    # Imported here: each engine's module builds its triggers from this one's pieces.
    from runledger.projections.views import counts_pg, counts_sqlite

    return counts_pg if backend.row_locks else counts_sqlite

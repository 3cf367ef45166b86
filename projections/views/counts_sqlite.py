"""The counts view's triggers on SQLite, a row at a time (SQLite has no statement triggers):
each written row takes the row it replaced out of the counts and puts itself in."""

from __future__ import annotations

from runledger.projections.backend import Backend, Cursor
from runledger.projections.views.counts import (
    COUNTS,
    TALLY,
    TRIGGER,
    openish,
    tallied,
    unresolved,
)

# No alias: SQLite refuses one in a trigger, and a bare column is the row that is there.
ADDED = "ON CONFLICT (what, status, class) DO UPDATE SET n = n + excluded.n"
# An entry's update moves the counts only when what they count moved (a claim does not).
_MOVED = "OLD.status IS NOT NEW.status OR OLD.terminal IS NOT NEW.terminal"
NAMES = [
    f"{TRIGGER}_{table}_{op}" for table in ("resources", "runs") for op in ("ins", "upd", "del")
]


def lock(b: Backend, cursor: Cursor) -> None:
    """SQLite has one writer at a time: the transaction that counts is it."""


def analysed(b: Backend) -> list[str]:
    return []


def trigger_names(b: Backend, cursor: Cursor) -> set[str]:
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    return {row["name"] for row in cursor.fetchall()}


def drops(b: Backend) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {name}" for name in NAMES]


def triggers(b: Backend) -> list[str]:
    resources, runs = b.qualify("rl_resources"), b.qualify("rl_runs")
    return [
        *drops(b),
        _trigger("resources_ins", f"INSERT ON {resources}", _entry(b, "NEW", 1)),
        _trigger(
            "resources_upd",
            f"UPDATE ON {resources} WHEN {_MOVED} OR OLD.run_id IS NOT NEW.run_id",
            _entry(b, "OLD", -1) + _entry(b, "NEW", 1),
        ),
        _trigger("resources_del", f"DELETE ON {resources}", _entry(b, "OLD", -1)),
        _trigger("runs_ins", f"INSERT ON {runs}", _run(b, "NEW.run_id", "NEW.status")),
        _trigger(
            "runs_upd",
            f"UPDATE ON {runs} WHEN OLD.status IS NOT NEW.status",
            _run(b, "NEW.run_id", "NEW.status"),
        ),
        _trigger("runs_del", f"DELETE ON {runs}", _run(b, "OLD.run_id", "NULL")),
    ]


def _trigger(name: str, on: str, body: list[str]) -> str:
    return f"CREATE TRIGGER {TRIGGER}_{name} AFTER {on} BEGIN {'; '.join(body)}; END"


def _counted(b: Backend, run_id: str, sign: int) -> str:
    """The run ``run_id`` counted (+1) or not any more (-1) in its status and class, as its
    tally says (not at all while no run row gave it a status)."""
    return f"""INSERT INTO {b.qualify(COUNTS)} (what, status, class, n)
        SELECT 'runs', t.status, {tallied("t")}, {sign} FROM {b.qualify(TALLY)} t
        WHERE t.run_id = {run_id} AND t.status IS NOT NULL {ADDED}"""


def _run(b: Backend, run_id: str, status: str) -> list[str]:
    """A run's row written (or deleted: ``status`` NULL): out of its count, its status, in."""
    return [
        _counted(b, run_id, -1),
        f"""INSERT INTO {b.qualify(TALLY)} (run_id, status, entries, unresolved, openish)
            VALUES ({run_id}, {status}, 0, 0, 0)
            ON CONFLICT (run_id) DO UPDATE SET status = excluded.status""",
        _counted(b, run_id, 1),
    ]


def _entry(b: Backend, row: str, sign: int) -> list[str]:
    """The entry ``row`` counted (+1) or not any more (-1): its run out of its class, the run's
    tally moved, the run into its class again; and the unresolved entries of its state."""
    return [
        _counted(b, f"{row}.run_id", -1),
        f"""INSERT INTO {b.qualify(TALLY)} (run_id, status, entries, unresolved, openish)
            VALUES ({row}.run_id, NULL, {sign}, {sign} * {unresolved(row)},
                {sign} * {openish(row)})
            ON CONFLICT (run_id) DO UPDATE SET entries = entries + excluded.entries,
            unresolved = unresolved + excluded.unresolved, openish = openish + excluded.openish""",
        _counted(b, f"{row}.run_id", 1),
        f"""INSERT INTO {b.qualify(COUNTS)} (what, status, class, n)
            SELECT 'entries', {row}.status, '', {sign} WHERE {unresolved(row)} = 1 {ADDED}""",
    ]

"""The counts view's triggers on PostgreSQL: one statement per written statement, over its
transition tables, so that a page of a thousand rows moves the counts once, not a thousand
times."""

from __future__ import annotations

from runledger.projections.backend import Backend, Cursor
from runledger.projections.views.counts import (
    ADDED,
    COUNTS,
    TALLY,
    TRIGGER,
    klass,
    openish,
    tallied,
    unresolved,
)

OPS = {
    "ins": ("INSERT", "NEW", None),
    "upd": ("UPDATE", "NEW", "OLD"),
    "del": ("DELETE", None, "OLD"),
}
TABLES = {"resources": "rl_resources", "runs": "rl_runs"}
NAMES = [f"{TRIGGER}_{table}_{op}" for table in TABLES for op in OPS]


def lock(b: Backend, cursor: Cursor) -> None:
    """No writer moves the rows while they are counted again (readers go on)."""
    tables = ", ".join(b.qualify(t) for t in TABLES.values())
    cursor.execute(f"LOCK TABLE {tables} IN SHARE ROW EXCLUSIVE MODE")


def analysed(b: Backend) -> list[str]:
    """Statistics for the tally counted again: without them the planner guessed every run open
    and compiled /metrics' read (JIT) for a second (scripts/MEASUREMENTS.md)."""
    return [f"ANALYZE {b.qualify(TALLY)}"]


def trigger_names(b: Backend, cursor: Cursor) -> set[str]:
    cursor.execute(
        "SELECT tgname FROM pg_trigger WHERE tgrelid IN (SELECT to_regclass(format("
        "'%%I.%%I', %s::text, t))::oid FROM unnest(%s::text[]) AS t)",
        [b.qualify("x").split(".")[0].strip('"'), list(TABLES.values())],
    )
    return {row["tgname"] for row in cursor.fetchall()}


def drops(b: Backend) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {TRIGGER}_{name}_{op} ON {b.qualify(table)}"
        for name, table in TABLES.items()
        for op in OPS
    ]


def triggers(b: Backend) -> list[str]:
    made: list[str] = []
    for name, table in TABLES.items():
        for op, (event, new, old) in OPS.items():
            trigger = f"{TRIGGER}_{name}_{op}"
            body = (_resources if name == "resources" else _runs)(b, new, old)
            function = b.qualify(trigger)
            refs = " ".join(f"{side} TABLE AS {side.lower()}_rows" for side in (new, old) if side)
            made += [
                f"""CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql
                    AS $$ BEGIN {body}; RETURN NULL; END $$""",
                f"DROP TRIGGER IF EXISTS {trigger} ON {b.qualify(table)}",
                f"""CREATE TRIGGER {trigger} AFTER {event} ON {b.qualify(table)}
                    REFERENCING {refs} FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
            ]
    return made


# An update moves the counts only through rows whose counted columns moved: a claim, an attempt,
# a new version of a row leave them as they were, and most pages write only those.
_CHANGED = (
    "n.status IS DISTINCT FROM o.status OR n.terminal IS DISTINCT FROM o.terminal OR "
    "n.run_id IS DISTINCT FROM o.run_id"
)


def _side(side: str, both: bool) -> str:
    if not both:
        return f"{side.lower()}_rows"
    this, other = ("new_rows n", "old_rows o") if side == "NEW" else ("old_rows o", "new_rows n")
    kept = "n" if side == "NEW" else "o"
    return f"(SELECT {kept}.* FROM {this} JOIN {other} ON o.entry_id = n.entry_id WHERE {_CHANGED})"


def _moves(new: str | None, old: str | None, columns: str) -> str:
    """The rows written (+1) and the rows they replaced (-1), with ``columns``."""
    sides = [(new, "1"), (old, "-1")]
    both = new is not None and old is not None
    return " UNION ALL ".join(
        f"SELECT {columns.format(s=sign)} FROM {_side(side, both)} n"
        for side, sign in sides
        if side
    )


def _resources(b: Backend, new: str | None, old: str | None) -> str:
    """Each run's tally moved by the rows written, and the counts by the classes it moved."""
    moves = _moves(
        new,
        old,
        f"n.run_id, n.status, {{s}} AS e, {{s}} * {unresolved('n')} AS u, "
        f"{{s}} * {openish('n')} AS o",
    )
    tally = b.qualify(TALLY)
    after = klass("m.e1", "m.u1", "m.o1")
    return f"""WITH moves AS ({moves}),
        per_run AS (SELECT run_id, SUM(e) AS e, SUM(u) AS u, SUM(o) AS o FROM moves
            GROUP BY run_id),
        moved AS (SELECT p.run_id, t.status, t.entries, t.unresolved, t.openish,
            COALESCE(t.entries, 0) + p.e AS e1, COALESCE(t.unresolved, 0) + p.u AS u1,
            COALESCE(t.openish, 0) + p.o AS o1
            FROM per_run p LEFT JOIN {tally} t ON t.run_id = p.run_id
            WHERE p.e <> 0 OR p.u <> 0 OR p.o <> 0),
        kept AS (INSERT INTO {tally} (run_id, status, entries, unresolved, openish)
            SELECT run_id, status, e1, u1, o1 FROM moved ON CONFLICT (run_id) DO UPDATE SET
            entries = excluded.entries, unresolved = excluded.unresolved,
            openish = excluded.openish),
        classes AS (SELECT m.status, {tallied("m")} AS class, -1 AS n FROM moved m
            UNION ALL SELECT m.status, {after}, 1 FROM moved m),
        delta AS (SELECT 'runs' AS what, status, class, SUM(n) AS n FROM classes
            WHERE status IS NOT NULL GROUP BY status, class
            UNION ALL SELECT 'entries', status, '', SUM(u) FROM moves WHERE u <> 0
            GROUP BY status)
        INSERT INTO {b.qualify(COUNTS)} AS c (what, status, class, n)
        SELECT what, status, class, n FROM delta WHERE n <> 0 {ADDED}"""


def _runs(b: Backend, new: str | None, old: str | None) -> str:
    """Each run's status in its tally, and the run counted out of its old status into the new
    (a deleted run: out of it only)."""
    if new:
        moves = "SELECT n.run_id, n.status FROM new_rows n"
    else:
        moves = "SELECT n.run_id, NULL::text AS status FROM old_rows n"
    tally = b.qualify(TALLY)
    # Only runs whose status moved: a page rewrites a run's row for every phase it advances.
    return f"""WITH moved AS (SELECT m.run_id, t.status AS s0, m.status AS s1, t.entries,
            t.unresolved, t.openish FROM ({moves}) m LEFT JOIN {tally} t ON t.run_id = m.run_id
            WHERE t.status IS DISTINCT FROM m.status),
        kept AS (INSERT INTO {tally} (run_id, status, entries, unresolved, openish)
            SELECT run_id, s1, 0, 0, 0 FROM moved
            ON CONFLICT (run_id) DO UPDATE SET status = excluded.status),
        classes AS (SELECT m.s0 AS status, {tallied("m")} AS class, -1 AS n FROM moved m
            UNION ALL SELECT m.s1, {tallied("m")}, 1 FROM moved m),
        delta AS (SELECT 'runs' AS what, status, class, SUM(n) AS n FROM classes
            WHERE status IS NOT NULL GROUP BY status, class)
        INSERT INTO {b.qualify(COUNTS)} AS c (what, status, class, n)
        SELECT what, status, class, n FROM delta WHERE n <> 0 {ADDED}"""

from __future__ import annotations

import re
from typing import Any

from runledger.domain.fate import OPEN, STATES, UNRESOLVED
from runledger.projections.backend import Backend, Cursor


def any_of(states: frozenset[str], column: str) -> str:
    """Whether ``column`` holds one of the domain's states, as SQL.

    Written as ORs, not as an ``IN`` list: SQLite tests an ``IN`` list of more than two values
    against a temporary table that it builds again each time a statement runs, so once for
    every row an ``executemany`` writes, and rl_resources' partial indexes test three a row:
    most of an upsert's work (scripts/MEASUREMENTS.md, "State tests as ORs").
    The states go in the order they are declared, so the text is the same on every run: SQLite
    uses a partial index only when the query repeats its condition."""
    return "(" + " OR ".join(f"{column} = '{state}'" for state in STATES if state in states) + ")"


def is_open(column: str = "r.status") -> str:
    """Entries automatic cleanup may still work; the sweep's candidate query reads only the
    index of these, so its cost does not grow with what has already been given back."""
    return any_of(OPEN, column)


def is_unresolved(column: str = "r.status") -> str:
    return any_of(UNRESOLVED, column)


# rl_resources' index of the open entries, the one the candidate query reads (the benchmarks
# look for it in the query's plan by this name).
OPEN_INDEX = "_open2"

# Index names carry the table's suffix ({ix_...}), so a rebuild's shadow tables have their own.
TABLE_DDL: dict[str, list[str]] = {
    "rl_tracking": [
        """CREATE TABLE IF NOT EXISTS {rl_tracking} (
            name TEXT PRIMARY KEY, position BIGINT NOT NULL)""",
    ],
    "rl_runs": [
        """CREATE TABLE IF NOT EXISTS {rl_runs} (
            run_id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL, ended_at DOUBLE PRECISION, ended_by TEXT,
            end_reason TEXT, phase INTEGER NOT NULL, version BIGINT NOT NULL,
            definition TEXT, definition_version BIGINT, occurrence_id TEXT, verified_by TEXT,
            verified_at DOUBLE PRECISION)""",
        """CREATE INDEX IF NOT EXISTS {ix_rl_runs}_running ON {rl_runs} (started_at)
            WHERE status = 'running'""",
        # The runs pages, newest first (read backwards), all of them or of one status: without
        # them a page sorted every run held (scripts/MEASUREMENTS.md, "Reads at 100,000 runs").
        "CREATE INDEX IF NOT EXISTS {ix_rl_runs}_started ON {rl_runs} (started_at, run_id)",
        """CREATE INDEX IF NOT EXISTS {ix_rl_runs}_status ON {rl_runs}
            (status, started_at, run_id)""",
    ],
    "rl_steps": [
        """CREATE TABLE IF NOT EXISTS {rl_steps} (
            step_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, step_id TEXT NOT NULL,
            phase INTEGER NOT NULL, action TEXT NOT NULL, state TEXT NOT NULL,
            attempts INTEGER NOT NULL, claim_worker TEXT, claim_expires DOUBLE PRECISION,
            last_error TEXT, done_at DOUBLE PRECISION, version BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS {ix_rl_steps}_run ON {rl_steps} (run_id, phase)",
    ],
    "rl_resources": [
        """CREATE TABLE IF NOT EXISTS {rl_resources} (
            entry_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, step TEXT NOT NULL,
            kind TEXT NOT NULL, ref TEXT NOT NULL, module TEXT NOT NULL, action TEXT,
            idempotency_key TEXT NOT NULL, payload TEXT, member_key TEXT,
            until DOUBLE PRECISION, status TEXT NOT NULL, attempts INTEGER NOT NULL,
            terminal INTEGER NOT NULL, claim_worker TEXT, claim_expires DOUBLE PRECISION,
            last_error TEXT, drift_current TEXT, recorded_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL, next_attempt DOUBLE PRECISION,
            version BIGINT NOT NULL)""",
        f"""CREATE INDEX IF NOT EXISTS {{ix_rl_resources}}{OPEN_INDEX} ON {{rl_resources}} (run_id)
            WHERE {is_open("status")} AND terminal = 0""",
        f"""CREATE INDEX IF NOT EXISTS {{ix_rl_resources}}_unresolved2 ON {{rl_resources}}
            (run_id) WHERE {is_unresolved("status")}""",
        f"""CREATE INDEX IF NOT EXISTS {{ix_rl_resources}}_target2 ON {{rl_resources}}
            (module, kind, ref) WHERE {is_unresolved("status")}""",
        """CREATE INDEX IF NOT EXISTS {ix_rl_resources}_run ON {rl_resources}
            (run_id, recorded_at)""",
    ],
    "rl_run_log": [
        """CREATE TABLE IF NOT EXISTS {rl_run_log} (
            position BIGINT PRIMARY KEY, run_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL,
            kind TEXT NOT NULL, detail TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS {ix_rl_run_log}_run ON {rl_run_log} (run_id, position)",
    ],
    "rl_runners": [
        """CREATE TABLE IF NOT EXISTS {rl_runners} (
            runner_id TEXT PRIMARY KEY, worker TEXT NOT NULL, host TEXT NOT NULL,
            pid BIGINT NOT NULL, modules TEXT NOT NULL, actions TEXT NOT NULL,
            leases TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL,
            stopped_at DOUBLE PRECISION, version BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS {ix_rl_runners}_started ON {rl_runners} (started_at)",
    ],
    "rl_tokens": [
        """CREATE TABLE IF NOT EXISTS {rl_tokens} (
            token_id TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL,
            digest TEXT NOT NULL, issued_by TEXT NOT NULL, issued_at DOUBLE PRECISION NOT NULL,
            revoked_at DOUBLE PRECISION, version BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS {ix_rl_tokens}_digest ON {rl_tokens} (digest)",
    ],
    "rl_definitions": [
        """CREATE TABLE IF NOT EXISTS {rl_definitions} (
            definition_id TEXT PRIMARY KEY, name TEXT NOT NULL, created_by TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL, revision BIGINT NOT NULL,
            fingerprint TEXT NOT NULL, edited_by TEXT NOT NULL,
            edited_at DOUBLE PRECISION NOT NULL, dry_runs BIGINT NOT NULL,
            last_dry_run_passed INTEGER, last_dry_run_by TEXT, last_dry_run_at DOUBLE PRECISION,
            passed_revision BIGINT, passed_fingerprint TEXT, passed_by TEXT,
            passed_at DOUBLE PRECISION, versions BIGINT NOT NULL, published_by TEXT,
            published_at DOUBLE PRECISION, latest_fingerprint TEXT, latest_verified_by TEXT,
            latest_verified_at DOUBLE PRECISION, scheduled BIGINT NOT NULL,
            version BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS {ix_rl_definitions}_name ON {rl_definitions} (name)",
    ],
    "rl_occurrences": [
        """CREATE TABLE IF NOT EXISTS {rl_occurrences} (
            occurrence_id TEXT PRIMARY KEY, definition_id TEXT NOT NULL,
            definition TEXT NOT NULL, due_at DOUBLE PRECISION NOT NULL, state TEXT NOT NULL,
            pinned_version BIGINT NOT NULL, verified_by TEXT, verified_at DOUBLE PRECISION,
            scheduled_by TEXT NOT NULL, scheduled_at DOUBLE PRECISION NOT NULL, run_id TEXT,
            started_by TEXT, started_at DOUBLE PRECISION, cancelled_by TEXT,
            cancelled_at DOUBLE PRECISION, version BIGINT NOT NULL)""",
        # The start leg's query: what is due, read in due order, whatever has already started.
        """CREATE INDEX IF NOT EXISTS {ix_rl_occurrences}_due ON {rl_occurrences} (due_at)
            WHERE state = 'scheduled'""",
        """CREATE INDEX IF NOT EXISTS {ix_rl_occurrences}_definition ON {rl_occurrences}
            (definition_id, due_at)""",
    ],
    "rl_deliveries": [
        """CREATE TABLE IF NOT EXISTS {rl_deliveries} (
            delivery_id TEXT PRIMARY KEY, subscription_id TEXT NOT NULL, fact TEXT NOT NULL,
            state TEXT NOT NULL, attempts BIGINT NOT NULL, queued_at DOUBLE PRECISION NOT NULL,
            next_at DOUBLE PRECISION, claim_until DOUBLE PRECISION, last_status BIGINT,
            last_error TEXT, version BIGINT NOT NULL)""",
        # The senders' query: what is pending, in the order it comes due.
        """CREATE INDEX IF NOT EXISTS {ix_rl_deliveries}_due ON {rl_deliveries} (next_at)
            WHERE state = 'pending'""",
        """CREATE INDEX IF NOT EXISTS {ix_rl_deliveries}_subscription ON {rl_deliveries}
            (subscription_id, queued_at, delivery_id)""",
    ],
    # Not a view: a liveness signal the runners overwrite every tick (projections/runners.py
    # says why it is not an event). No projection reads or rebuilds it.
    "rl_heartbeats": [
        """CREATE TABLE IF NOT EXISTS {rl_heartbeats} (
            runner_id TEXT PRIMARY KEY, beat_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS {ix_rl_heartbeats}_beat ON {rl_heartbeats} (beat_at)",
    ],
}


# Indexes an earlier runledger made and `runledger init` drops: their conditions were IN lists
# (any_of says why they are ORs now), and the indexes that replace them have new names, so that
# init creates them in an older store.
RETIRED_INDEXES: dict[str, list[str]] = {
    "rl_resources": ["_open", "_unresolved", "_target"],
}


# Columns added after a table was first created: `runledger init` adds them to an older store.
# Each is NULL for every event written before it, which is what replaying those events gives.
ADDED_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "rl_resources": [("next_attempt", "DOUBLE PRECISION")],
    "rl_runs": [
        ("definition", "TEXT"),
        ("definition_version", "BIGINT"),
        ("occurrence_id", "TEXT"),
        ("verified_by", "TEXT"),
        ("verified_at", "DOUBLE PRECISION"),
    ],
}


def columns(backend: Backend, cursor: Cursor, table: str) -> set[str]:
    cursor.execute(backend.sql(f"SELECT * FROM {{{table}}} LIMIT 0"))
    # The library's SQLite cursor wraps sqlite3's and does not pass its description on.
    inner: Any = getattr(cursor, "sqlite_cursor", cursor)
    return {str(column[0]) for column in inner.description or []}


def add_columns(backend: Backend, cursor: Cursor) -> None:
    for table, added in ADDED_COLUMNS.items():
        present = columns(backend, cursor, table)
        for name, kind in added:
            if name not in present:
                cursor.execute(backend.sql(f"ALTER TABLE {{{table}}} ADD COLUMN {name} {kind}"))


def missing_columns(backend: Backend) -> list[str]:
    """Columns a newer runledger reads that this store's tables lack (``table.column``)."""
    with backend.transaction(commit=False) as cursor:
        return [
            f"{table}.{name}"
            for table, added in ADDED_COLUMNS.items()
            for name, _ in added
            if name not in columns(backend, cursor, table)
        ]


_INDEX_NAME = re.compile(r"CREATE INDEX IF NOT EXISTS (\w+) ON")


def missing_indexes(backend: Backend) -> list[str]:
    """The indexes this runledger creates that the store lacks (an earlier one made it)."""
    wanted = [
        match.group(1)
        for statements in TABLE_DDL.values()
        for statement in statements[1:]
        if (match := _INDEX_NAME.search(backend.sql(statement)))
    ]
    from runledger.projections.views import counts  # it builds on this module

    gone = backend.absent(wanted)
    return [f"index {name}" for name in wanted if name in gone] + counts.missing(backend)


def drop_retired_indexes(backend: Backend, cursor: Cursor) -> None:
    for table, suffixes in RETIRED_INDEXES.items():
        for suffix in suffixes:
            cursor.execute(f"DROP INDEX IF EXISTS {backend.qualify(table)}{suffix}")


def create_table(backend: Backend, cursor: Cursor, table: str, *, indexes: bool = True) -> None:
    statements = TABLE_DDL[table] if indexes else TABLE_DDL[table][:1]
    for statement in statements:
        cursor.execute(backend.sql(statement))


def create_indexes(backend: Backend, cursor: Cursor, table: str) -> None:
    """A table's indexes; the counts' triggers, and the counts again, for a table they count
    (a rebuild's swap puts a new table in, which has none)."""
    from runledger.projections.views import counts

    for statement in TABLE_DDL[table][1:]:
        cursor.execute(backend.sql(statement))
    if table in counts.COUNTED:
        counts.create(backend, cursor)


def create_tables(backend: Backend, cursor: Cursor, view_names: list[str]) -> None:
    """Create the projection tables and their tracking rows; safe to run again."""
    for table in TABLE_DDL:
        create_table(backend, cursor, table)
    add_columns(backend, cursor)
    drop_retired_indexes(backend, cursor)
    insert = backend.sql(
        "INSERT INTO {rl_tracking} (name, position) VALUES (%s, 0) ON CONFLICT DO NOTHING"
    )
    for name in view_names:
        cursor.execute(insert, [name])
    from runledger.projections.views import counts

    counts.create(backend, cursor)

"""The SQL texts of the sweep's reads, written once: which runs owe the world something, those
runs with their entries counted, and each one's page of retryable entries. ``Queries`` sends
them, and so does the plain-SQL sweep the benchmarks measure against (scripts/sweep_sql.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.domain.fate import STATES
from runledger.domain.resource import LEASE_KIND
from runledger.projections.schema import is_open, is_unresolved

# Work automatic cleanup may still do: retryable entries, and attempts in flight.
_OPEN = (
    f"{is_open()} AND r.terminal = 0 AND "
    "(r.attempts < %s OR (r.claim_expires IS NOT NULL AND r.claim_expires > %s))"
)
# ... that is not under a live claim and whose back-off has passed: the work a sweep may take now.
_RETRYABLE = (
    f"{is_open()} AND r.terminal = 0 AND r.attempts < %s "
    "AND (r.claim_expires IS NULL OR r.claim_expires <= %s) "
    "AND (r.next_attempt IS NULL OR r.next_attempt <= %s)"
)


# Where a run started by an occurrence came from (rows.RunRow.origin).
ORIGIN = "u.definition, u.definition_version, u.occurrence_id, u.verified_by, u.verified_at"

# Open entries are grouped by run first (the partial index), and each such run is then looked up
# by key. A plain join lets PostgreSQL hash-join a sequential scan of every run ever held, so
# its time grows with the history (scripts/MEASUREMENTS.md, "Candidate query: open entries
# grouped first").
CANDIDATES = f"""SELECT c.run_id FROM (
        SELECT o.run_id, o.overdue,
          (SELECT u.status FROM {{rl_runs}} u WHERE u.run_id = o.run_id) AS status,
          (SELECT u.ended_at FROM {{rl_runs}} u WHERE u.run_id = o.run_id) AS ended_at
        FROM (SELECT r.run_id, MAX(CASE WHEN r.kind = '{LEASE_KIND}' AND r.until <= %s
                                  THEN 1 ELSE 0 END) AS overdue
              FROM {{rl_resources}} r WHERE {_RETRYABLE} GROUP BY r.run_id) o
    ) c
    WHERE c.status IS NOT NULL AND (c.status <> 'running' OR c.overdue = 1)
    ORDER BY COALESCE(c.ended_at, 0), c.run_id
    LIMIT %s"""


# How many of a run's rows are in each state (rows.RunRow.states): the words a person reads
# ("3 given back, 1 kept") are counted from the rows, like the status beside them.
BY_STATE = ", ".join(
    f"SUM(CASE WHEN r.status = '{state}' THEN 1 ELSE 0 END) AS n_{state}" for state in STATES
)


def runs_statement(among: str) -> str:
    """Runs by id with their entries counted; parameters: max attempts, now, then the ids twice,
    each as ``among`` takes them (``IN (%s, ...)`` or ``= ANY(%s)``).

    The ids name the entries too (``r.run_id`` among them), so that they are found through the
    index by run: with the join's condition alone PostgreSQL hashed a scan of every entry of
    the store (scripts/MEASUREMENTS.md, "Where a page's time went")."""
    return f"""SELECT u.run_id, u.name, u.status, u.ended_by, u.end_reason, u.started_at,
        u.ended_at, {ORIGIN}, {BY_STATE},
        COUNT(r.entry_id) AS entries,
        SUM(CASE WHEN {is_unresolved()} THEN 1 ELSE 0 END) AS unresolved,
        SUM(CASE WHEN {_OPEN} THEN 1 ELSE 0 END) AS open
    FROM {{rl_runs}} u LEFT JOIN {{rl_resources}} r
        ON r.run_id = u.run_id AND r.run_id {among}
    WHERE u.run_id {among}
    GROUP BY u.run_id, u.name, u.status, u.ended_by, u.end_reason, u.started_at,
        u.ended_at, {ORIGIN}
    ORDER BY u.started_at, u.run_id"""


PAGE = 5_000
"""The most entries of one run a sweep pass reads: its memory does not grow with the run."""


def retryable_statement(overdue_leases_only: bool) -> str:
    """One run's page of retryable entries; parameters: run, max attempts, now, now, (now when
    only overdue leases), limit."""
    lease_clause = f"AND r.kind = '{LEASE_KIND}' AND r.until <= %s" if overdue_leases_only else ""
    return f"""SELECT * FROM {{rl_resources}} r WHERE r.run_id = %s AND {_RETRYABLE}
    {lease_clause} ORDER BY r.recorded_at, r.entry_id LIMIT %s"""


def retryable_pages_statement(
    runs: list[tuple[UUID, bool]],
    now: datetime,
    max_attempts: int,
    limit: int,
    *,
    lateral: bool = False,
) -> tuple[str, list[Any]]:
    """Several runs' pages of retryable entries in one statement, each run's page served by
    the index as it is alone, in the order of ``runs``. With ``lateral`` (PostgreSQL), one text
    whatever the runs: their ids go in an array, each read by a LATERAL subquery. A UNION ALL
    of ten subqueries took PostgreSQL longer to plan, every pass, than to execute
    (scripts/MEASUREMENTS.md, "Retryable pages in one LATERAL text")."""
    stamp = now.timestamp()
    if lateral:
        statement = f"""SELECT p.* FROM unnest(%s::text[], %s::int[]) WITH ORDINALITY
            AS w(run_id, overdue_only, n)
        CROSS JOIN LATERAL (SELECT * FROM {{rl_resources}} r
            WHERE r.run_id = w.run_id AND {_RETRYABLE}
            AND (w.overdue_only = 0 OR (r.kind = '{LEASE_KIND}' AND r.until <= %s))
            ORDER BY r.recorded_at, r.entry_id LIMIT %s) p
        ORDER BY w.n, p.recorded_at, p.entry_id"""
        ids = [str(run_id) for run_id, _ in runs]
        flags = [int(overdue_only) for _, overdue_only in runs]
        return statement, [ids, flags, max_attempts, stamp, stamp, stamp, limit]
    parts: list[str] = []
    params: list[Any] = []
    for n, (run_id, overdue_only) in enumerate(runs):
        parts.append(f"SELECT * FROM ({retryable_statement(overdue_only)}) AS p{n}")
        params += [str(run_id), max_attempts, stamp, stamp, *([stamp] * overdue_only), limit]
    return " UNION ALL ".join(parts), params

"""Each view's tracking row: the store position it has applied up to, committed with its rows."""

from __future__ import annotations

from runledger.projections.backend import Backend, Cursor


def positions(backend: Backend) -> dict[str, int]:
    with backend.transaction(commit=False) as cursor:
        cursor.execute(backend.sql("SELECT name, position FROM {rl_tracking}"))
        return {row["name"]: int(row["position"]) for row in cursor.fetchall()}


def lock(backend: Backend, cursor: Cursor, names: list[str]) -> dict[str, int]:
    """Lock the views' tracking rows in name order, and read their positions. Projectors in
    several processes must meet the rows in one order: an UPDATE over all of them met them in
    heap order, which moves as rows are updated, and two projectors deadlocked (CI, four
    runners). PostgreSQL locks them in one statement (a locking clause applies after ORDER BY);
    SQLite locks the whole file at a transaction's first write."""
    names = sorted(names)
    where = f"name IN ({backend.markers(len(names))})"
    read = f"SELECT name, position FROM {{rl_tracking}} WHERE {where} ORDER BY name"
    if backend.row_locks:
        cursor.execute(backend.sql(read + " FOR UPDATE"), names)
    else:
        cursor.execute(
            backend.sql(f"UPDATE {{rl_tracking}} SET position = position WHERE {where}"), names
        )
        cursor.execute(backend.sql(read), names)
    return {row["name"]: int(row["position"]) for row in cursor.fetchall()}


def track(backend: Backend, cursor: Cursor, reached: dict[str, int]) -> None:
    """Move each view's row forward to the position it reached, never back."""
    for position in sorted(set(reached.values())):
        names = [n for n, p in reached.items() if p == position]
        cursor.execute(
            backend.sql(
                "UPDATE {rl_tracking} SET position = %s "
                f"WHERE position < %s AND name IN ({backend.markers(len(names))})"
            ),
            [position, position, *names],
        )

"""Each view's tracking row: the store position it has applied up to, committed with its rows."""

from __future__ import annotations

from runledger.projections.backend import Backend, Cursor


def positions(backend: Backend) -> dict[str, int]:
    with backend.transaction(commit=False) as cursor:
        cursor.execute(backend.sql("SELECT name, position FROM {rl_tracking}"))
        return {row["name"]: int(row["position"]) for row in cursor.fetchall()}


def lock(backend: Backend, cursor: Cursor, names: list[str]) -> dict[str, int]:
    """Lock the views' tracking rows one by one in name order. One UPDATE over all of them
    locks in the order PostgreSQL meets the tuples, which moves as rows are updated: two
    projectors met the same two rows in opposite orders and deadlocked (CI, four runners)."""
    names = sorted(names)
    statement = backend.sql("UPDATE {rl_tracking} SET position = position WHERE name = %s")
    for name in names:
        cursor.execute(statement, [name])
    where = f"name IN ({backend.markers(len(names))})"
    cursor.execute(backend.sql(f"SELECT name, position FROM {{rl_tracking}} WHERE {where}"), names)
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

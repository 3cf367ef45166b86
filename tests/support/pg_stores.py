"""Initialised PostgreSQL stores for the tests, each in a private schema, handed out again once
emptied rather than made anew.

Making a store (CREATE SCHEMA, `init`'s hundred statements) and dropping it cost the server
~90 ms of CPU, and some 860 tests of the suite each made one; emptying one costs ~1 ms and
checking that its shape is still `init`'s ~10 ms. A store is handed out again only when nothing
the test did can reach it: the test started no process (it is not in the slow tier), left no
thread of its own running (a runledger not closed keeps its pool's), and the schema's tables,
columns, triggers and functions are exactly those `init` made. Anything else is dropped, as
every store was before.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

from runledger.application.bootstrap import init_store
from runledger.application.settings import Settings
from scripts.pg import drop_pg_url, new_pg_url

SHAPE = """
WITH rel AS (
    SELECT c.oid, c.relname, c.relkind FROM pg_class c
    WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = %(schema)s)
)
SELECT
    (SELECT string_agg(rel.relname || ':' || rel.relkind::text || ':' || a.attname || ':'
        || a.atttypid::text, ',' ORDER BY rel.relname, a.attnum)
     FROM rel LEFT JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0
        AND NOT a.attisdropped) AS relations,
    (SELECT string_agg(t.tgname || ':' || t.tgenabled::text, ',' ORDER BY t.tgname)
     FROM pg_trigger t WHERE t.tgrelid IN (SELECT oid FROM rel)) AS triggers,
    (SELECT string_agg(p.proname || ':' || md5(p.prosrc), ',' ORDER BY p.proname)
     FROM pg_proc p
     WHERE p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = %(schema)s))
        AS functions
"""
LAST = ("rl_run_tally", "rl_counts")
"""Emptied after the others: emptying the runs and entries moves the counts (their triggers)."""


class PgStores:
    """One worker's stores: ``take`` one, ``give_back`` it when the test is done."""

    def __init__(self, admin: str) -> None:
        self.admin = admin
        self.free: list[str] = []
        self.made: dict[str, Any] | None = None
        """The shape of a store as `init` makes it, and the rows it writes (its tracking)."""

    def take(self) -> str:
        if self.free:
            return self.free.pop()
        url = new_pg_url(self.admin)
        init_store(Settings(database_url=url))
        if self.made is None:
            self.made = self._seen(url)
        return url

    def give_back(self, url: str, *, reusable: bool) -> None:
        if reusable and self._emptied(url):
            self.free.append(url)
        else:
            drop_pg_url(self.admin, url)

    def close(self) -> None:
        while self.free:
            drop_pg_url(self.admin, self.free.pop())

    def _seen(self, url: str) -> dict[str, Any]:
        schema = _schema(url)
        with psycopg.connect(self.admin, autocommit=True) as conn:
            shape = conn.execute(SHAPE, {"schema": schema}).fetchone()
            tracking = conn.execute(f'SELECT * FROM "{schema}".rl_tracking').fetchall()
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema]
                )
            ]
            sequences = [
                row[0]
                for row in conn.execute(
                    "SELECT sequencename FROM pg_sequences WHERE schemaname = %s", [schema]
                )
            ]
        order = [t for t in tables if t not in LAST] + [t for t in LAST if t in tables]
        return {"shape": shape, "tracking": tracking, "tables": order, "sequences": sequences}

    def _emptied(self, url: str) -> bool:
        """Empty the store at ``url`` if it still has `init`'s shape; say whether it had."""
        made = self.made
        schema = _schema(url)
        if made is None:
            return False
        with psycopg.connect(self.admin, autocommit=True) as conn, conn.transaction():
            if conn.execute(SHAPE, {"schema": schema}).fetchone() != made["shape"]:
                return False
            for table in made["tables"]:
                conn.execute(f'DELETE FROM "{schema}"."{table}"')
            for sequence in made["sequences"]:
                conn.execute("SELECT setval(%s, 1, false)", [f'"{schema}"."{sequence}"'])
            for row in made["tracking"]:
                marks = ", ".join(["%s"] * len(row))
                conn.execute(f'INSERT INTO "{schema}".rl_tracking VALUES ({marks})', row)
        return True


def _schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def ended(before: set[threading.Thread], wait_s: float = 1.0) -> bool:
    """Whether every thread started since ``before`` has ended (each given a moment to)."""
    for thread in set(threading.enumerate()) - before:
        thread.join(wait_s)
        if thread.is_alive():
            return False
    return True

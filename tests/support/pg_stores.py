"""Initialised PostgreSQL stores for the tests, each in a private schema, handed out again once
emptied rather than made anew.

Making a store (CREATE SCHEMA, `init`'s hundred statements) and dropping it cost the server
~90 ms of CPU, and some 860 tests of the suite each made one; checking that its shape is still
`init`'s and emptying it cost ~2 ms. A store is handed out again only when nothing
the test did can reach it: the test started no process (it is not in the slow tier), left no
thread of its own running (a runledger not closed keeps its pool's), and the schema's tables,
columns, indexes, triggers and functions are exactly those `init` made. Anything else is dropped, as
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
WITH objects AS (
    SELECT classid, objid FROM pg_depend
    WHERE refclassid = 'pg_namespace'::regclass
        AND refobjid = (SELECT oid FROM pg_namespace WHERE nspname = %(schema)s)
), rels AS (
    SELECT c.oid, c.relname, c.relkind FROM objects o JOIN pg_class c ON c.oid = o.objid
    WHERE o.classid = 'pg_class'::regclass
)
SELECT
    (SELECT string_agg(r.relname || ':' || r.relkind::text || ':' || a.attname || ':'
        || a.atttypid::text, ',' ORDER BY r.relname, a.attnum)
     FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid
     WHERE a.attnum > 0 AND NOT a.attisdropped) AS relations,
    (SELECT string_agg(i.relname, ',' ORDER BY i.relname)
     FROM rels r JOIN pg_index x ON x.indrelid = r.oid JOIN pg_class i ON i.oid = x.indexrelid)
        AS indexes,
    (SELECT string_agg(t.tgname || ':' || t.tgenabled::text, ',' ORDER BY t.tgname)
     FROM rels r JOIN pg_trigger t ON t.tgrelid = r.oid) AS triggers,
    (SELECT string_agg(p.proname || ':' || md5(p.prosrc), ',' ORDER BY p.proname)
     FROM objects o JOIN pg_proc p ON p.oid = o.objid
     WHERE o.classid = 'pg_proc'::regclass) AS functions
"""
"""What the schema holds, found through the catalog's indexes (pg_depend by namespace, then by
oid): a scan of pg_class, bloated by the suite's schemas made and dropped, took ~60 ms."""
LAST = ("rl_run_tally", "rl_counts")
"""Emptied after the others: emptying the runs and entries moves the counts (their triggers)."""


class PgStores:
    """One worker's stores: ``take`` one, ``give_back`` it when the test is done."""

    def __init__(self, admin: str) -> None:
        self.admin = admin
        self.free: list[str] = []
        self.made: dict[str, Any] | None = None
        """The shape of a store as `init` makes it, and the rows it writes (its tracking)."""
        self._conn: psycopg.Connection[Any] | None = None

    @property
    def conn(self) -> psycopg.Connection[Any]:
        """One connection for all the emptying: a new one costs the server ~10 ms of CPU to
        fill its catalog cache, and then as much again for every table it touches first."""
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.admin, autocommit=True)
            self._conn.execute("SET jit = off")  # estimates from a bloated catalog invite it
        return self._conn

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
        if self._conn is not None:
            self._conn.close()

    def _seen(self, url: str) -> dict[str, Any]:
        schema = _schema(url)
        conn = self.conn
        shape = conn.execute(SHAPE, {"schema": schema}).fetchone()
        tracking = conn.execute(f'SELECT * FROM "{schema}".rl_tracking').fetchall()
        listed = "SELECT {0}name FROM pg_{0}s WHERE schemaname = %s"
        tables = [row[0] for row in conn.execute(listed.format("table"), [schema])]
        sequences = [row[0] for row in conn.execute(listed.format("sequence"), [schema])]
        order = [t for t in tables if t not in LAST] + [t for t in LAST if t in tables]
        return {"shape": shape, "tracking": tracking, "tables": order, "sequences": sequences}

    def _emptied(self, url: str) -> bool:
        """Empty the store at ``url`` if it still has `init`'s shape; say whether it had."""
        made = self.made
        schema = _schema(url)
        if made is None:
            return False
        conn = self.conn
        with conn.transaction():
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

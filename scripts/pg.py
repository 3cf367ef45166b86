"""A private PostgreSQL schema to run in: made under the admin URL, named in the store URL
(``?schema=``), dropped at the end. The tests' fixtures and the drills make theirs here."""

from __future__ import annotations

import os
import uuid

import psycopg

PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def new_pg_url(admin: str) -> str:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{admin}?schema={schema}"


def drop_pg_url(admin: str, url: str) -> None:
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

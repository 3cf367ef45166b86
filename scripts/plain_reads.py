"""A fair baseline for the runs page: plain FastAPI over a psycopg pool doing the page's own work
(the bearer token's row, the page's ids, its rows with their entries counted by runledger's own
statement, the same response schema), without runledger's layers: no fresh-read wait, no request
log, no console, no sessions.

    RUNLEDGER_DATABASE_URL=postgresql://...?schema=S uvicorn scripts.plain_reads:app

`bench_reads.py` starts it beside `runledger serve` and asks both the same.
"""

from __future__ import annotations

import os
import time
from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from runledger.application.reading.schemas.runs import RunPage
from runledger.application.reading.shapes import run_summary
from runledger.application.store.url import store_config
from runledger.domain.token import digest
from runledger.projections.rows import RunRow
from runledger.projections.statements import runs_statement

app = FastAPI()
_pools: list[ConnectionPool] = []


def pool() -> ConnectionPool:
    if not _pools:
        env = store_config(os.environ["RUNLEDGER_DATABASE_URL"]).env
        _pools.append(
            ConnectionPool(
                make_conninfo(
                    host=env["POSTGRES_HOST"],
                    port=env["POSTGRES_PORT"],
                    dbname=env["POSTGRES_DBNAME"],
                    user=env["POSTGRES_USER"],
                    options=f"-c search_path={env['POSTGRES_SCHEMA']}",
                ),
                min_size=4,
                kwargs={"autocommit": True},
            )
        )
    return _pools[0]


def holder(authorization: Annotated[str, Header()]) -> str:
    with pool().connection() as conn, conn.cursor(row_factory=dict_row) as cursor:
        row = cursor.execute(
            "SELECT name FROM rl_tokens WHERE digest = %s AND revoked_at IS NULL",
            [digest(authorization.removeprefix("Bearer "))],
        ).fetchone()
    if row is None:
        raise HTTPException(status_code=401)
    return str(row["name"])


@app.get("/admin/events/runs", response_model=RunPage)
def runs(_: Annotated[str, Depends(holder)], limit: int = 50) -> RunPage:
    with pool().connection() as conn, conn.cursor(row_factory=dict_row) as cursor:
        found = cursor.execute(
            "SELECT run_id FROM rl_runs ORDER BY started_at DESC, run_id DESC LIMIT %s",
            [limit],
        ).fetchall()
        ids = [row["run_id"] for row in found]
        statement = runs_statement("= ANY(%s)").format(
            rl_runs="rl_runs", rl_resources="rl_resources"
        )
        rows = cursor.execute(statement, [5, time.time(), ids, ids]).fetchall()
    return RunPage(items=[run_summary(RunRow.of(row)) for row in rows], next_cursor=None)

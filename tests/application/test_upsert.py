"""A view's rows written in one go: inserted, replaced, twice in one transaction, at sizes on
either side of where PostgreSQL switches from a batched upsert to COPY into scratch."""

from __future__ import annotations

from typing import Any

import pytest

from runledger.application.runledger import Runledger
from runledger.projections.postgres import UPSERT_COPY_FROM
from runledger.projections.views.resources import ResourcesView

COLUMNS = ResourcesView.columns


def row(n: int, status: str, attempts: int) -> list[Any]:
    values: dict[str, Any] = {
        "entry_id": f"e-{n:05d}",
        "run_id": "run",
        "step": "s",
        "kind": "creature",
        "ref": f"c-{n}",
        "module": "m",
        "idempotency_key": "k",
        "status": status,
        "attempts": attempts,
        "terminal": 0,
        "recorded_at": 1.0,
        "updated_at": 2.0,
        "version": attempts + 1,
    }
    return [values.get(c) for c in COLUMNS]


def stored(rl: Runledger) -> dict[str, tuple[str, int]]:
    rows = rl.backend.select(
        rl.backend.sql("SELECT entry_id, status, attempts FROM {rl_resources} WHERE run_id = %s"),
        ["run"],
    )
    return {r["entry_id"]: (r["status"], r["attempts"]) for r in rows}


@pytest.mark.parametrize("size", [UPSERT_COPY_FROM - 1, UPSERT_COPY_FROM, 3 * UPSERT_COPY_FROM])
def test_rows_are_inserted_then_replaced_even_twice_in_one_transaction(
    rl: Runledger, size: int
) -> None:
    backend = rl.backend

    def upsert(cursor: Any, rows: list[list[Any]]) -> None:
        backend.upsert(cursor, "rl_resources", COLUMNS, "entry_id", rows)

    with backend.transaction(commit=True) as cursor:
        upsert(cursor, [row(n, "live", 0) for n in range(size)])
    assert stored(rl) == {f"e-{n:05d}": ("live", 0) for n in range(size)}

    half = size // 2
    with backend.transaction(commit=True) as cursor:
        upsert(cursor, [row(n, "failing", 1) for n in range(half, size + half)])
        upsert(cursor, [row(n, "reverted", 2) for n in range(size + half - 1, half - 1, -2)])
    expected = {f"e-{n:05d}": ("live", 0) for n in range(half)}
    expected |= {f"e-{n:05d}": ("failing", 1) for n in range(half, size + half)}
    expected |= {f"e-{n:05d}": ("reverted", 2) for n in range(size + half - 1, half - 1, -2)}
    assert stored(rl) == expected

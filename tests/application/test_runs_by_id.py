"""Runs read by id (a runs page's rows, the sweep's candidates) on either store. On PostgreSQL
the ids travel as one string the server splits (projections/postgres.py, ``among``): a list
parameter was written element by element by the driver, in Python."""

from __future__ import annotations

from uuid import uuid4

import pytest

from runledger.application.runledger import Runledger
from tests.support.playing import ended_run
from tests.support.world import World


def test_runs_read_by_id_are_the_runs_asked_for_whatever_their_number(
    rl: Runledger, world: World
) -> None:
    runs = [ended_run(rl, [f"c{i}", f"d{i}"])[0] for i in range(3)]
    now, attempts = rl.clock(), rl.settings.max_revert_attempts
    assert rl.queries.runs([], now, attempts) == []
    for asked in ([runs[0]], runs[:2], [*runs, uuid4()]):
        rows = rl.queries.runs(asked, now, attempts)
        assert sorted(r.run_id for r in rows) == sorted(set(asked) & set(runs))
        assert all(r.entries == 2 and r.status == "completed" for r in rows)


def test_a_value_that_would_split_in_two_is_refused_not_split(
    store_url: str, rl: Runledger
) -> None:
    if not store_url.startswith("postgresql"):
        pytest.skip("SQLite takes a marker a value: nothing is split")
    with pytest.raises(ValueError, match="no comma"):
        rl.backend.among(["a,b"])
    assert rl.backend.among(["a", "b"])[1] == ["a,b"]

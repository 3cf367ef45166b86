"""The sweep's candidate query reads the open-entries index entry by entry, never by a bitmap.

On PostgreSQL a bitmap scan never marks the index entries of rows updated out of a partial
index, so without a VACUUM (autovacuum off, or behind) every candidate query met every entry
ever given back: 43 ms at 300,000 (scripts/MEASUREMENTS.md, part 2). A plain index scan marks
them as it meets them. These tests hold the candidate query to reading that way, and every other
read as it was; the effect at 300,000 entries is measured by scripts/bench_sweep.py --parts 2 (a
test store is too small for the planner to choose a bitmap scan either way).
"""

from __future__ import annotations

from typing import Any

from runledger.application.runledger import Runledger
from runledger.projections.backend import Backend
from tests.support.playing import ended_run
from tests.support.world import World

SETTING = "SELECT current_setting('enable_bitmapscan') AS value"


def bitmap_setting(backend: Backend, *, by_index: bool) -> str | None:
    rows = backend.select(SETTING, [], by_index=by_index)
    return str(rows[0]["value"]) if backend.placeholder() == "%s" else None


def sent_by_candidate_runs(rl: Runledger) -> list[tuple[str, list[Any], bool]]:
    """What candidate_runs asks of the backend: each statement, its parameters and by_index."""
    sent: list[tuple[str, list[Any], bool]] = []
    select = rl.backend.select

    def spy(statement: str, params: Any, *, by_index: bool = False) -> list[Any]:
        sent.append((statement, list(params), by_index))
        return select(statement, params, by_index=by_index)

    rl.backend.select = spy  # type: ignore[method-assign]
    try:
        rl.queries.candidate_runs(rl.clock(), rl.settings.max_revert_attempts, 10)
    finally:
        del rl.backend.select
    return sent


def test_the_candidate_query_asks_for_the_index_and_other_reads_do_not(
    rl: Runledger, world: World
) -> None:
    ended_run(rl, ["c1", "c2"])
    sent = sent_by_candidate_runs(rl)
    assert [by_index for *_, by_index in sent] == [True]
    run = rl.queries.candidate_runs(rl.clock(), 3, 10)[0]
    assert [r.run_id for r in rl.queries.runs([run], rl.clock(), 3)] == [run]


def test_a_read_by_index_turns_bitmap_scans_off_for_itself_alone(rl: Runledger) -> None:
    backend = rl.backend
    if backend.placeholder() != "%s":
        assert [tuple(r) for r in backend.select("SELECT 1 AS one", [], by_index=True)] == [(1,)]
        return
    assert bitmap_setting(backend, by_index=True) == "off"
    for _ in range(4):  # whichever pooled connection a later read gets
        assert bitmap_setting(backend, by_index=False) == "on"

"""GET /metrics reads the counts view (projections/views/counts.py), not a scan of the runs: a
count changed in the view, and only there, is what a scrape says."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from runledger.projections.views import counts
from tests.application.test_projections import ledger_a_run
from tests.conftest import Factory
from tests.support.api_support import serving
from tests.support.world import World


def scraped(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def test_a_scrape_says_what_the_counts_view_holds(make_runledger: Factory, world: World) -> None:
    rl = make_runledger()
    ledger_a_run(rl)
    rl.projector.catch_up()
    served = serving(rl)
    with served.client:
        before = served.client.get("/metrics").text
        assert scraped(before, "runledger_unresolved_entries") == {(("state", "live"),): 3.0}
        with rl.backend.transaction(commit=True) as cursor:  # the view alone, not the rows
            table = rl.backend.qualify(counts.COUNTS)
            cursor.execute(f"UPDATE {table} SET n = n + 40 WHERE what = 'entries'")
            cursor.execute(
                f"INSERT INTO {table} (what, status, class, n) "
                "VALUES ('runs', 'aborted', 'complete', 7)"
            )
        after = served.client.get("/metrics").text
    assert scraped(after, "runledger_unresolved_entries") == {(("state", "live"),): 43.0}
    runs = scraped(after, "runledger_runs")
    assert runs[(("cleanup", "complete"), ("status", "aborted"))] == 7.0
    assert runs[(("cleanup", "pending"), ("status", "completed"))] == 1.0

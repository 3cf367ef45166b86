"""GET /metrics: what the store says now (counted at scrape), and what this process measured."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from runledger.application.runledger import Runledger


class StoreCollector(Collector):
    def __init__(self, rl: Runledger) -> None:
        self.rl = rl

    def collect(self) -> Iterator[Metric]:
        rl = self.rl
        now = rl.clock()
        runs = GaugeMetricFamily(
            "runledger_runs", "Runs by status and cleanup status.", labels=["status", "cleanup"]
        )
        for status, cleanup, n in rl.pages.run_counts(now, rl.settings.max_revert_attempts):
            runs.add_metric([status, cleanup], n)
        yield runs
        unresolved = GaugeMetricFamily(
            "runledger_unresolved_entries", "Unresolved ledger entries by state.", labels=["state"]
        )
        for state, n in rl.pages.unresolved_counts():
            unresolved.add_metric([state], n)
        yield unresolved
        lag = GaugeMetricFamily(
            "runledger_projection_lag", "Events a projection has still to apply.", labels=["view"]
        )
        head = rl.projector.head()
        for name, position in sorted(rl.projector.positions().items()):
            lag.add_metric([name], max(head - position, 0))
        yield lag
        # The runners are application/fleet_metrics.py's: keyed by id, their beats timestamps.

"""What the store says of the runners and this process says of its modules, for Prometheus.

Runners are keyed by their id, not only their worker name: two runners of one name (a restart
on the same host and pid, or two hosts named alike) are two series, never one duplicated.
A heartbeat is a timestamp (``time() - x`` in a rule is its age), so it means the same in every
scrape and every replica.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from runledger.application.modules.status import ModuleStatus
from runledger.application.runledger import Runledger

LABEL_LIMIT = 120
HEARTBEAT = "runledger_runner_heartbeat_timestamp_seconds"


class FleetCollector(Collector):
    """The runners the store lists (the newest, bounded by the fleet's listing): the last
    heartbeat of each that has not left, and how many are live, gone and stopped."""

    def __init__(self, rl: Runledger) -> None:
        self.rl = rl

    def collect(self) -> Iterator[Metric]:
        listed = self.rl.fleet.listing(self.rl.clock())
        beats = GaugeMetricFamily(
            HEARTBEAT,
            "When each runner last beat (Unix time), by runner id; stopped runners are left out.",
            labels=["runner_id", "worker", "state"],
        )
        states = dict.fromkeys(("live", "gone", "stopped"), 0)
        for runner in listed:
            states[runner.state] = states.get(runner.state, 0) + 1
            if runner.last_beat is not None and runner.state != "stopped":
                labels = [str(runner.runner_id), runner.worker[:LABEL_LIMIT], runner.state]
                beats.add_metric(labels, runner.last_beat.timestamp())
        yield beats
        counts = GaugeMetricFamily(
            "runledger_runners", "Runners the store lists, by state.", labels=["state"]
        )
        for state, n in sorted(states.items()):
            counts.add_metric([state], n)
        yield counts


class ModulesCollector(Collector):
    """Each module this process found: 1 when it started, 0 when it failed to."""

    def __init__(self, statuses: Callable[[], Sequence[ModuleStatus]]) -> None:
        self.statuses = statuses

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "runledger_module_up",
            "Whether each module this process found started (1) or failed to start (0).",
            labels=["module", "folder"],
        )
        for status in self.statuses():
            name = (status.name or "")[:LABEL_LIMIT]
            folder = os.path.basename(status.folder)[:LABEL_LIMIT]
            up.add_metric([name, folder], int(status.status == "loaded"))
        yield up

"""A runner's own metrics on a port of its own (``runledger runner --metrics-port``): its ticks,
the entries it gave back, what failed, its heartbeat, beside what every process says of itself
(build, process, modules). Keyed by the runner's id: a restart under the same name is a new
series, never a count that goes back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from runledger.application.fleet_metrics import HEARTBEAT, LABEL_LIMIT
from runledger.application.services.running.runner import Runner, TickReport
from runledger.application.telemetry import Telemetry


@dataclass
class Counted:
    ticks: int = 0
    given_back: int = 0
    failed: dict[str, int] = field(default_factory=lambda: {"step": 0, "give_back": 0})


class RunnerMetrics(Collector):
    """Told of each tick (it wraps the runner's observer), read at each scrape."""

    def __init__(self, runner: Runner, telemetry: Telemetry) -> None:
        self.runner = runner
        self.told = telemetry.tick
        self.counted = Counted()
        self.last_id = ""
        runner.observe = self.observed

    def observed(self, report: TickReport, advance_s: float, cleanup_s: float) -> None:
        self.told(report, advance_s, cleanup_s)
        counted = self.counted
        counted.ticks += 1
        counted.given_back += sum(s.reverted for s in report.swept.values())
        counted.failed["step"] += report.advance.failed
        counted.failed["give_back"] += sum(s.failed + s.drifted for s in report.swept.values())

    def collect(self) -> Iterator[Metric]:
        runner = self.runner
        if runner.runner_id is not None:
            self.last_id = str(runner.runner_id)
        if not self.last_id:
            return  # not joined yet: no id to key a series by
        keys = [self.last_id, runner.worker[:LABEL_LIMIT]]
        yield self._counter("ticks", "Ticks this runner finished.", keys, self.counted.ticks)
        yield self._counter(
            "entries_given_back", "Entries this runner gave back.", keys, self.counted.given_back
        )
        failures = CounterMetricFamily(
            "runledger_runner_failures",
            "What failed in this runner's ticks: a step dispatched (step), an entry given back "
            "(give_back: failed or drifted).",
            labels=["runner_id", "worker", "kind"],
        )
        for kind, n in sorted(self.counted.failed.items()):
            failures.add_metric([*keys, kind], n)
        yield failures
        yield from self._gauges(keys)

    def _gauges(self, keys: list[str]) -> Iterator[Metric]:
        trouble = GaugeMetricFamily(
            "runledger_runner_store_trouble",
            "1 while this runner cannot work the store (away, or a projection stuck).",
            labels=["runner_id", "worker"],
        )
        trouble.add_metric(keys, int(self.runner.trouble is not None))
        yield trouble
        beat_at = self.runner.beat_at
        if beat_at is not None:
            beat = GaugeMetricFamily(
                HEARTBEAT, "When this runner last beat (Unix time).", labels=["runner_id", "worker"]
            )
            beat.add_metric(keys, beat_at.timestamp())
            yield beat

    @staticmethod
    def _counter(name: str, said: str, keys: list[str], value: int) -> Metric:
        family = CounterMetricFamily(
            f"runledger_runner_{name}", said, labels=["runner_id", "worker"]
        )
        family.add_metric(keys, value)
        return family


@dataclass
class MetricsServer:
    """prometheus_client's own HTTP server in a daemon thread, stopped with the runner."""

    server: WSGIServer
    thread: threading.Thread

    @classmethod
    def start(cls, registry: CollectorRegistry, host: str, port: int) -> MetricsServer:
        return cls(*start_http_server(port, addr=host, registry=registry))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

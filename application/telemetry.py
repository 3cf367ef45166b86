"""What a process measures of itself for /metrics and its log: ticks, legs and module calls.

Each composition root has its own registry (no process-wide globals), so two in one process (a
test's) do not count into each other.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from runledger import __version__

if TYPE_CHECKING:
    from runledger.application.services.running.runner import TickReport

log = logging.getLogger("runledger.telemetry")

LEG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.legs = Histogram(
            "runledger_leg_seconds",
            "How long a runner's tick legs took (advance, cleanup = the sweep, tick = both).",
            ["leg"],
            registry=self.registry,
            buckets=LEG_BUCKETS,
        )
        self.module_calls = Histogram(
            "runledger_module_call_seconds",
            "Module calls by action (or lease) and outcome.",
            ["action", "outcome"],
            registry=self.registry,
            buckets=LEG_BUCKETS,
        )
        self.requests = Counter(
            "runledger_http_requests",
            "HTTP requests answered, by route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "runledger_http_request_duration_seconds",
            "How long HTTP requests took to answer, by route template (never the raw path).",
            ["route"],
            registry=self.registry,
            buckets=REQUEST_BUCKETS,
        )
        self.braked = Counter(
            "runledger_auth_braked",
            "Sign-ins (console) and bearer tokens (api) refused 429: too many failures from "
            "the client's address in a minute.",
            ["door"],
            registry=self.registry,
        )
        self.webhook_failures = Counter(
            "runledger_webhook_deliveries_failed",
            "Webhook attempts not answered 2xx (refused, timed out, an error status), by event.",
            ["event"],
            registry=self.registry,
        )
        built(self.registry)

    def tick(self, report: TickReport, advance_s: float, cleanup_s: float) -> None:
        """Time the legs; a tick that did work says what in one line, an idle one says nothing."""
        self.legs.labels(leg="advance").observe(advance_s)
        self.legs.labels(leg="cleanup").observe(cleanup_s)
        self.legs.labels(leg="tick").observe(advance_s + cleanup_s)
        done = report.advance
        given_back = sum(s.reverted for s in report.swept.values())
        failed = done.failed + sum(s.failed + s.drifted for s in report.swept.values())
        started = len(report.started.started)
        if started or done.dispatched or done.completed or done.aborted or report.swept:
            say(
                "runner.tick",
                started=started,
                dispatched=done.dispatched,
                completed=done.completed,
                aborted=done.aborted,
                given_back=given_back,
                failed=failed,
                ms=round((advance_s + cleanup_s) * 1000, 2),
            )

    def module_call(self, action: str, outcome: str, seconds: float) -> None:
        self.module_calls.labels(action=action[:120], outcome=outcome).observe(seconds)


def built(registry: CollectorRegistry) -> None:
    """Which runledger this process runs (runledger_build_info) and the process's own CPU,
    memory and open files: every process that serves metrics, serve and runner alike."""
    info = Gauge(
        "runledger_build_info",
        "The runledger version this process runs.",
        ["version"],
        registry=registry,
    )
    info.labels(version=__version__).set(1)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)


def say(event: str, **fields: Any) -> None:
    """One line of the process's log: what happened, and its fields."""
    log.info(
        "%s %s",
        event,
        " ".join(f"{k}={v}" for k, v in fields.items()),
        extra={"fields": fields, "event": event},
    )


class JsonLines(logging.Formatter):
    """One JSON object per line: time (UTC, to the millisecond), level, logger, message, and the
    line's fields."""

    def format(self, record: logging.LogRecord) -> str:
        at = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, Any] = {
            "time": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        event = getattr(record, "event", None)
        if event is not None:
            line["event"] = event
            line.update(getattr(record, "fields", {}))
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging() -> None:
    """Structured lines when RUNLEDGER_LOG_FORMAT=json, plain text otherwise."""
    handler = logging.StreamHandler()
    if os.environ.get("RUNLEDGER_LOG_FORMAT", "").strip().lower() == "json":
        handler.setFormatter(JsonLines())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.INFO)

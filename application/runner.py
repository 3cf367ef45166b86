from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from uuid import UUID

from application.cleanup import Cleanup, Summary
from application.reconcile import Reconciler
from application.runs import AdvanceReport, Runs

log = logging.getLogger("runledger.runner")


@dataclass
class TickReport:
    advance: AdvanceReport
    swept: dict[UUID, Summary]


class Runner:
    """The tick: the advance leg, then the cleanup leg, so a run that ends in a tick is given
    back in the same tick."""

    def __init__(self, runs: Runs, cleanup: Cleanup, reconciler: Reconciler, worker: str) -> None:
        self.runs = runs
        self.cleanup = cleanup
        self.reconciler = reconciler
        self.worker = worker

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        advance = self.runs.advance_leg(self.worker, stop)
        swept = {} if stop is not None and stop.is_set() else self.cleanup.sweep(self.worker, stop)
        return TickReport(advance, swept)

    def run(self, interval_s: float, stop: threading.Event) -> int:
        """Reconcile every module once, then tick until ``stop`` is set; answers the ticks."""
        self.reconciler.reconcile_all()
        ticks = 0
        while not stop.is_set():
            try:
                self.tick(stop)
            except Exception:  # a tick that fails is logged; the next one tries again
                log.exception("tick failed")
            ticks += 1
            stop.wait(interval_s)
        return ticks

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from uuid import UUID

from application.cleanup import Cleanup
from application.errors import (
    STORE_ERRORS,
    CannotCatchUp,
    NotInitialised,
    ProjectionStuck,
    RunledgerError,
    StoreError,
    store_error,
)
from application.reconcile import Reconciler
from application.runs import AdvanceReport, Runs
from application.settings import store_config
from application.verdicts import Summary

log = logging.getLogger("runledger.runner")

TROUBLE: tuple[type[BaseException], ...] = (
    ProjectionStuck, CannotCatchUp, StoreError, NotInitialised, *STORE_ERRORS,
)
"""What a tick can fail with that is the store's state, not a fault in this runner's code."""


@dataclass
class TickReport:
    advance: AdvanceReport
    swept: dict[UUID, Summary]


class Runner:
    """The tick: the advance leg, then the cleanup leg, so a run that ends in a tick is given
    back in the same tick.

    While a projection is stuck the legs do not go on: they decide from the views (what is due,
    what is retryable), and a view stopped before an event it cannot apply is stale about that
    entry or run and everything after it. The runner says so once, keeps trying every tick (a
    catch-up that finds the event unchanged only reads), and says once when it is clear.
    """

    def __init__(self, runs: Runs, cleanup: Cleanup, reconciler: Reconciler, worker: str) -> None:
        self.runs = runs
        self.cleanup = cleanup
        self.reconciler = reconciler
        self.worker = worker
        self.trouble: str | None = None

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        advance = self.runs.advance_leg(self.worker, stop)
        swept = {} if stop is not None and stop.is_set() else self.cleanup.sweep(self.worker, stop)
        return TickReport(advance, swept)

    def run(self, interval_s: float, stop: threading.Event) -> int:
        """Reconcile every module once, then tick until ``stop`` is set; answers the ticks."""
        reconciled = False
        ticks = 0
        while not stop.is_set():
            try:
                if not reconciled:
                    self.reconciler.reconcile_all()
                    reconciled = True
                self.tick(stop)
            except TROUBLE as error:
                self._troubled(error)
            except Exception:  # a tick that fails is logged; the next one tries again
                log.exception("tick failed")
            else:
                self._cleared()
            ticks += 1
            stop.wait(interval_s)
        return ticks

    def _troubled(self, error: BaseException) -> None:
        """One line when the trouble starts (or changes), not one every tick."""
        sentence = str(self._sentence(error))
        if sentence == self.trouble:
            return
        self.trouble = sentence
        if isinstance(error, ProjectionStuck):
            log.error("the legs wait until the projections can go on: %s", sentence)
        else:
            log.warning("the store is in trouble; trying again every tick: %s", sentence)

    def _cleared(self) -> None:
        if self.trouble is not None:
            log.warning("clear again, the runner goes on (it was: %s)", self.trouble)
            self.trouble = None

    def _sentence(self, error: BaseException) -> RunledgerError:
        try:
            config = store_config(self.runs.settings.database_url)
        except RunledgerError:
            return store_error(error, "store")
        return store_error(error, config.display, config.env.get("SQLITE_DBNAME"))

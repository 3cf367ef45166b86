from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

from runledger.application.errors import (
    STORE_ERRORS,
    CannotCatchUp,
    NotInitialised,
    ProjectionStuck,
    RunledgerError,
    StoreError,
    store_error,
)
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.runs import AdvanceReport, Runs
from runledger.application.services.starts import StartReport, Starts
from runledger.application.services.verdicts import Summary
from runledger.application.settings import store_config

log = logging.getLogger("runledger.runner")

TROUBLE: tuple[type[BaseException], ...] = (
    ProjectionStuck,
    CannotCatchUp,
    StoreError,
    NotInitialised,
    *STORE_ERRORS,
)
"""What a tick can fail with that is the store's state, not a fault in this runner's code."""


@dataclass
class TickReport:
    advance: AdvanceReport
    swept: dict[UUID, Summary]
    started: StartReport = field(default_factory=StartReport)


Observer = Callable[[TickReport, float, float], None]
"""Told of each tick: its report, the start and advance legs' seconds, the cleanup leg's."""


class Runner:
    """The tick: the start leg (due occurrences become runs), the advance leg, then the cleanup
    leg, so a run that starts in a tick is dispatched in it, and one that ends in a tick is given
    back in the same tick. A runner records itself in the store (Fleet): it joins before its first
    tick, beats at the start of every tick, and leaves however it stops.

    While a projection is stuck the legs do not go on: they decide from the views (what is due,
    what is retryable), and a view stopped before an event it cannot apply is stale about that
    entry or run and everything after it. The runner says so once, keeps trying every tick (a
    catch-up that finds the event unchanged only reads), and says once when it is clear.
    """

    def __init__(
        self,
        *,
        runs: Runs,
        starts: Starts,
        cleanup: Cleanup,
        reconciler: Reconciler,
        worker: str,
        fleet: Fleet,
        loaded: Loaded,
        observe: Observer | None = None,
    ) -> None:
        self.runs = runs
        self.starts = starts
        self.cleanup = cleanup
        self.reconciler = reconciler
        self.worker = worker
        self.fleet = fleet
        self.loaded = loaded
        self.observe = observe
        self.runner_id: UUID | None = None
        self.trouble: str | None = None
        self.stuck = False

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        started = time.perf_counter()
        begun = self.starts.start_leg(self.worker, stop)
        advance = self.runs.advance_leg(self.worker, stop)
        advanced = time.perf_counter()
        swept = {} if stop is not None and stop.is_set() else self.cleanup.sweep(self.worker, stop)
        report = TickReport(advance, swept, begun)
        if self.observe is not None:
            self.observe(report, advanced - started, time.perf_counter() - advanced)
        return report

    def join(self) -> None:
        """Record this runner in the store, with what it loaded; ``run`` does it first."""
        loaded = self.loaded
        self.runner_id = self.fleet.join(self.worker, loaded.modules, loaded.actions, loaded.leases)

    def once(self) -> TickReport:
        """One tick as a runner of its own: join, tick, leave."""
        self.join()
        try:
            return self.tick()
        finally:
            self._leave()

    def run(self, interval_s: float, stop: threading.Event) -> int:
        """Join (unless joined), reconcile every module once, then beat and tick until ``stop``
        is set; leave however the loop ends. Answers the ticks."""
        reconciled = False
        ticks = 0
        try:
            while not stop.is_set():
                try:
                    self._beat()
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
        finally:
            self._leave()
        return ticks

    def _beat(self) -> None:
        """Join until joined (a store that is away at start is trouble like any), then beat."""
        if self.runner_id is None:
            self.join()
        else:
            self.fleet.beat(self.runner_id)

    def _leave(self) -> None:
        """Said once on the way out; a store that is away then leaves the runner to be shown
        as gone after the bound, which is what it is."""
        if self.runner_id is None:
            return
        try:
            self.fleet.leave(self.runner_id)
        except TROUBLE as error:
            log.warning(
                "could not record that runner %s stopped: %s", self.worker, self._sentence(error)
            )
        self.runner_id = None

    def _troubled(self, error: BaseException) -> None:
        """One line when the trouble starts (or turns from the store's into a stuck projection
        or back), not one every tick: an outage says "refused", then "closed", then "timed out"
        as it goes on, and is still one outage."""
        sentence = str(self._sentence(error))
        stuck = isinstance(error, ProjectionStuck)
        known = self.trouble is not None and self.stuck == stuck
        self.trouble, self.stuck = sentence, stuck
        if known:
            log.debug("still in trouble: %s", sentence)
            return
        if stuck:
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

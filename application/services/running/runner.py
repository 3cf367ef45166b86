from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar
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
from runledger.application.modules.deadline import ABANDONED
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.running.starts import StartReport, Starts
from runledger.application.services.runs import AdvanceReport, Runs
from runledger.application.services.sweep.pacing import Swept, Wake, sweep_leg
from runledger.application.services.sweep.verdicts import Summary
from runledger.application.settings import Settings, store_config

log = logging.getLogger("runledger.runner")
T = TypeVar("T")

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
    cut_short: bool = False
    """The cleanup leg's time ran out with work still found: the runner ticks again at once."""


Observer = Callable[[TickReport, float, float], None]
"""Told of each tick: its report, the start and advance legs' seconds, the cleanup leg's."""


class Runner:
    """The tick: the start leg (due occurrences become runs), the advance leg, then the cleanup
    leg, so a run that starts in a tick is dispatched in it, and one that ends in a tick is given
    back in the same tick. The cleanup leg is bounded by time (pacing); between ticks a run that
    ends elsewhere wakes it. A runner records itself in the store (Fleet): it joins before its
    first tick, beats at the start of every tick, and leaves however it stops.

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
        settings: Settings,
        wake: Wake | None = None,
        observe: Observer | None = None,
    ) -> None:
        self.runs = runs
        self.starts = starts
        self.cleanup = cleanup
        self.reconciler = reconciler
        self.worker = worker
        self.fleet = fleet
        self.loaded = loaded
        self.settings = settings
        self.wake = wake
        self.observe = observe
        self.runner_id: UUID | None = None
        self.trouble: str | None = None
        self.stuck = False
        self._reconciled = False

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        started = time.perf_counter()
        begun = self.starts.start_leg(self.worker, stop)
        advance = self.runs.advance_leg(self.worker, stop)
        advanced = time.perf_counter()
        swept = Swept({}) if stop is not None and stop.is_set() else self.cleanup_leg(stop)
        report = TickReport(advance, swept.runs, begun, swept.cut_short)
        if self.observe is not None:
            self.observe(report, advanced - started, time.perf_counter() - advanced)
        return report

    def cleanup_leg(self, stop: threading.Event | None = None) -> Swept:
        """Sweep until nothing is left or EVENT_CLEANUP_BUDGET_S is spent. A run that ends
        after this leg begins wakes the runner's rest; one that ended before is this leg's."""
        if self.wake is not None:
            self.wake.mark()
        return sweep_leg(
            lambda halt: self.cleanup.sweep_more(self.worker, halt),
            stop,
            self.settings.cleanup_budget_s,
        )

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
        is set, resting ``interval_s`` between ticks unless a leg was cut short by its bound;
        leave however the loop ends. Answers the ticks."""
        self._reconciled = False
        ticks = 0
        try:
            while not stop.is_set():
                report = self._safely(lambda: self._tick(stop))
                ticks += 1
                if report is None or not (report.cut_short or report.advance.cut_short):
                    self._rest(interval_s, stop)
        finally:
            self._await_abandoned()
            self._leave()
        return ticks

    def _await_abandoned(self) -> None:
        """Calls abandoned at their deadline may still answer, and what they name is ledgered
        then: wait a bounded grace for them, and say which were left."""
        left = ABANDONED.wait(self.settings.shutdown_grace_s)
        if left:
            log.warning(
                "runner %s stops with %d call(s) abandoned at their deadline still running; "
                "what they answer now is not ledgered, and cleanup gives back their keys: %s",
                self.worker,
                len(left),
                "; ".join(left),
            )

    def _tick(self, stop: threading.Event) -> TickReport:
        self._beat()
        if not self._reconciled:
            self.reconciler.reconcile_all()
            self._reconciled = True
        return self.tick(stop)

    def _rest(self, interval_s: float, stop: threading.Event) -> None:
        """Until the next tick. A run that ended meanwhile (the API, the CLI, another runner) is
        given back now: a cleanup leg alone, the other legs keep their interval."""
        wake = self.wake
        deadline = time.monotonic() + interval_s
        # Counted as well as timed: a test's frozen clock holds time.monotonic still, while
        # stop.wait always waits in real time.
        looks = max(1, math.ceil(interval_s / self.settings.wake_s))
        for _ in range(looks):
            left = deadline - time.monotonic()
            if left <= 0 or stop.wait(min(left, interval_s / looks)):
                return
            if wake is None:
                continue
            try:
                ended = wake.runs_ended()
            except Exception:  # the next tick meets it and says so once, not this rest 20 a second
                wake = None
                continue
            swept = self._safely(lambda: self._woken(stop)) if ended else None
            if swept is not None and swept.cut_short:
                return

    def _woken(self, stop: threading.Event) -> Swept:
        started = time.perf_counter()
        swept = self.cleanup_leg(stop)
        if self.observe is not None:
            report = TickReport(AdvanceReport(), swept.runs, cut_short=swept.cut_short)
            self.observe(report, 0.0, time.perf_counter() - started)
        return swept

    def _safely(self, work: Callable[[], T]) -> T | None:
        """The work's answer; None when it failed, said once for the store's trouble."""
        try:
            done = work()
        except TROUBLE as error:
            self._troubled(error)
            return None
        except Exception:  # a tick that fails is logged; the next one tries again
            log.exception("tick failed")
            return None
        self._cleared()
        return done

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

from __future__ import annotations

import logging
import math
import threading
import time
from datetime import datetime
from uuid import UUID

from runledger.application.modules.deadline import ABANDONED
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.running.membership import Membership
from runledger.application.services.running.starts import Starts
from runledger.application.services.running.tick import Legs
from runledger.application.services.running.tick import Observer as Observer
from runledger.application.services.running.tick import TickReport as TickReport
from runledger.application.services.running.trouble import StoreTrouble
from runledger.application.services.runs import Runs
from runledger.application.services.sweep.pacing import Swept, Wake
from runledger.application.settings import Settings

log = logging.getLogger("runledger.runner")


class Runner:
    """The loop around the tick (tick.py): a runner records itself in the store (membership.py):
    it joins before its first tick, beats at the start of every tick (unless its last one
    failed: membership.py says why), and leaves however it stops.
    Between ticks it rests, unless a run that ends elsewhere wakes its cleanup leg. The store's
    trouble, a stuck projection among it, is said once and tried again every tick (trouble.py).
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
        self.troubles = StoreTrouble(settings=runs.settings)
        self.membership = Membership(
            fleet=fleet, worker=worker, loaded=loaded, troubles=self.troubles
        )
        self.legs = Legs(
            runs=runs,
            starts=starts,
            cleanup=cleanup,
            worker=worker,
            settings=settings,
            wake=wake,
            observe=observe,
            beat=self.membership.again,
        )
        self.reconciler = reconciler
        self.worker = worker
        self.settings = settings
        self.wake = wake
        self._reconciled = False
        self.beat_at: datetime | None = None
        """When this runner last beat, as its process saw it (its metrics port says so)."""

    @property
    def observe(self) -> Observer | None:
        return self.legs.observe

    @observe.setter
    def observe(self, observe: Observer | None) -> None:
        self.legs.observe = observe

    @property
    def runner_id(self) -> UUID | None:
        """This runner's row in the fleet while it is joined."""
        return self.membership.runner_id

    @property
    def trouble(self) -> str | None:
        """The store's trouble as last said; None while it is clear."""
        return self.troubles.sentence_now

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        return self.legs.tick(stop)

    def cleanup_leg(self, stop: threading.Event | None = None) -> Swept:
        return self.legs.cleanup_leg(stop)

    def join(self) -> None:
        """Record this runner in the store, with what it loaded; ``run`` does it first."""
        self.membership.join()

    def once(self) -> TickReport:
        """One tick as a runner of its own: join, tick, leave. It looks at every run, not at a
        share: a person who asks for a tick beside a live runner wants what is due now."""
        self.membership.join(divides=False)
        try:
            return self.tick()
        finally:
            self._leave()

    def run(self, interval_s: float, stop: threading.Event) -> int:
        """Join (unless joined), reconcile every module once, then beat and tick until ``stop``
        is set, resting ``interval_s`` between ticks unless a leg was cut short by its bound;
        leave however the loop ends. Answers the ticks."""
        self._reconciled = False
        self.membership.every_s = interval_s
        ticks = 0
        try:
            while not stop.is_set():
                report = self.troubles.safely(lambda: self._tick(stop))
                self.membership.failing = report is None
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
        """Until the next tick. A run of this runner's share that ended meanwhile (the API, the
        CLI, another runner) is given back now: a cleanup leg alone, the other legs keep their
        interval."""
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
            owed = self.legs.owes(ended)
            swept = self.troubles.safely(lambda: self._woken(stop)) if owed else None
            if swept is not None and swept.cut_short:
                return

    def _woken(self, stop: threading.Event) -> Swept:
        return self.legs.woken(stop)

    def _beat(self) -> None:
        if self.membership.beat():
            self.beat_at = self.membership.fleet.clock()

    def _leave(self) -> None:
        self.membership.leave()

"""One tick's legs, in their order: the start leg (due occurrences become runs), the advance leg,
then the cleanup leg, so a run that starts in a tick is dispatched in it, and one that ends in a
tick is given back in the same tick. The cleanup leg is bounded by time (pacing); between ticks
a run that ends elsewhere wakes it alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

from runledger.application.services.cleanup import Cleanup
from runledger.application.services.running.advancing import AdvanceReport
from runledger.application.services.running.division import EVERYTHING, Current
from runledger.application.services.running.starts import StartReport, Starts
from runledger.application.services.runs import Runs
from runledger.application.services.sweep.pacing import LOOK_AT, Halt, Swept, Wake, sweep_leg
from runledger.application.services.sweep.verdicts import Summary
from runledger.application.settings import Settings


@dataclass
class TickReport:
    advance: AdvanceReport
    swept: dict[UUID, Summary]
    started: StartReport = field(default_factory=StartReport)
    cut_short: bool = False
    """The cleanup leg's time ran out with work still found: the runner ticks again at once."""


Observer = Callable[[TickReport, float, float], None]
"""Told of each tick: its report, the start and advance legs' seconds, the cleanup leg's."""


class Legs:
    """The legs of one tick in one worker's name, and the cleanup leg alone when woken."""

    def __init__(
        self,
        *,
        runs: Runs,
        starts: Starts,
        cleanup: Cleanup,
        worker: str,
        settings: Settings,
        wake: Wake | None,
        observe: Observer | None,
        beat: Callable[[], None] = lambda: None,
    ) -> None:
        self.runs = runs
        self.starts = starts
        self.cleanup = cleanup
        self.worker = worker
        self.settings = settings
        self.wake = wake
        self.observe = observe
        self.beat = beat
        """Said before the cleanup leg and each of its passes (membership.py, division.py)."""
        self.share = EVERYTHING
        """The runners' division as this worker's last cleanup leg read it."""

    def tick(self, stop: threading.Event | None = None) -> TickReport:
        started = time.perf_counter()
        begun = self.starts.start_leg(self.worker, stop)
        advance = self.runs.advance_leg(self.worker, stop, self.beat)
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
        self.beat()
        current = Current(self.cleanup.share)

        def one_pass(halt: Halt) -> tuple[dict[UUID, Summary], bool]:
            self.beat()
            share = self.share = current.share()
            return self.cleanup.sweep_more(self.worker, halt, share)

        return sweep_leg(
            one_pass,
            stop,
            self.settings.cleanup_budget_s,
        )

    def owes(self, ended: list[UUID]) -> bool:
        """Whether runs that ended elsewhere wake this worker's cleanup leg: one of them is its
        own by the division its last leg read (every run ended woke every runner, and all but
        one found nothing of theirs). A run whose owner stopped since is given back by the next
        tick's leg, which reads the division again."""
        return len(ended) >= LOOK_AT or any(self.share.mine(run_id) for run_id in ended)

    def woken(self, stop: threading.Event) -> Swept:
        """The cleanup leg alone, between ticks, told to the observer as a tick that did only it."""
        started = time.perf_counter()
        swept = self.cleanup_leg(stop)
        if self.observe is not None:
            report = TickReport(AdvanceReport(), swept.runs, cut_short=swept.cut_short)
            self.observe(report, 0.0, time.perf_counter() - started)
        return swept

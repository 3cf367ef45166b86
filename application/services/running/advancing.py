"""The runner's advance leg: due steps dispatched within the tick's bounds, a run whose step
gave up aborted, and phases whose steps are done moved on."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.errors import OUTAGES
from runledger.application.services.ledger import Ledger
from runledger.application.services.phases import Moved, RunPhases
from runledger.application.services.running.dispatch import Dispatched, Dispatcher
from runledger.application.services.running.rotation import RunRotation
from runledger.application.services.serving import ServedElsewhere
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.errors import RunNotRunning
from runledger.domain.progress import ready_at, times
from runledger.domain.run import Run
from runledger.domain.spec import RunSpec
from runledger.domain.step import MAX_STEP_ATTEMPTS, Step

log = logging.getLogger("runledger.runs")


@dataclass
class AdvanceReport:
    runs: int = 0
    dispatched: int = 0
    succeeded: int = 0
    failed: int = 0
    phases_advanced: int = 0
    completed: int = 0
    aborted: int = 0
    cut_short: bool = False
    """The tick's step bound left due steps undispatched: the runner ticks again at once."""

    def count_dispatch(self, outcome: Dispatched) -> None:
        self.dispatched += outcome != "not_mine"
        self.succeeded += outcome == "succeeded"
        self.failed += outcome == "failed"

    def count_move(self, outcome: Moved) -> None:
        self.phases_advanced += outcome == "advanced"
        self.completed += outcome == "completed"


@dataclass
class TickBudget:
    """Steps a tick may still dispatch: EVENT_STEPS_PER_TICK in all, EVENT_STEPS_PER_RUN_TICK
    for the run at hand. A step the budget does not reach is dispatched in a later tick."""

    left: int
    per_run: int
    run_left: int = 0

    @property
    def spent(self) -> bool:
        return self.left <= 0

    def allows(self) -> bool:
        return not self.spent and self.run_left > 0

    def spend(self) -> None:
        self.left -= 1
        self.run_left -= 1


class AdvanceLeg:
    """One pass of the advance leg over the runs its rotation hands it."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        phases: RunPhases,
        rotation: RunRotation,
        ledger: Ledger,
        dispatcher: Dispatcher,
        settings: Settings,
        clock: Callable[[], datetime],
        serving: Callable[[], ServedElsewhere],
    ) -> None:
        self.app = app
        self.phases = phases
        self.rotation = rotation
        self.ledger = ledger
        self.dispatcher = dispatcher
        self.settings = settings
        self.clock = clock
        self.serving = serving

    def run(
        self,
        worker: str,
        stop: threading.Event | None = None,
        beat: Callable[[], None] = lambda: None,
    ) -> AdvanceReport:
        """Dispatch due steps, within the tick's bounds, and move phases on."""
        elsewhere = self.serving()  # this leg's answer: per call, never kept on a service
        report = AdvanceReport()
        budget = TickBudget(self.settings.steps_per_tick, self.settings.steps_per_run_tick)
        order = self.rotation.order()
        for index, run_id in enumerate(order):
            if (stop is not None and stop.is_set()) or budget.spent:
                self.rotation.unreached(order[index:])
                report.cut_short = budget.spent
                break
            beat()
            if not self.rotation.still_mine(run_id):
                continue  # another runner's since the page was read: its own leg advances it
            try:
                if self._advance_run(run_id, (worker, elsewhere), report, stop, budget):
                    self.rotation.again(run_id)
                    report.cut_short = True
            except (IntegrityError, RunNotRunning) as error:
                log.debug("run %s moved under another runner: %s", run_id, error)
            except OUTAGES:
                raise  # the store's trouble, not this run's: the runner says so once
            except Exception:  # one run's failure must not stall the others
                log.exception("advancing run %s failed; the leg goes on", run_id)
        return report

    def _advance_run(
        self,
        run_id: UUID,
        asker: tuple[str, ServedElsewhere],
        report: AdvanceReport,
        stop: threading.Event | None,
        budget: TickBudget,
    ) -> bool:
        """Advance one run; answers whether the tick's bound left due steps of it undispatched."""
        run, spec = self.phases.load(run_id)
        if run.is_terminal:
            return False
        report.runs += 1
        budget.run_left = budget.per_run
        cut_short = False
        steps = self.phases.steps(run, run.phase)
        for step in steps:
            if stop is not None and stop.is_set():
                return False
            cut_short = self._step(run, step, asker, report, budget) or cut_short
            if step.gave_up:
                self._give_up(run, step, report)
                return False
        self._move_on_when_ready(run, spec, steps, report)
        return cut_short

    def _step(
        self,
        run: Run,
        step: Step,
        asker: tuple[str, ServedElsewhere],
        report: AdvanceReport,
        budget: TickBudget,
    ) -> bool:
        """Settle or dispatch one step; answers whether the tick's bound left it undispatched."""
        self._settle_abandoned(step)
        if not step.dispatchable(self.clock()):
            return False
        if not budget.allows():
            return budget.spent
        worker, elsewhere = asker
        outcome = self.dispatcher.dispatch(run.id, step, worker, elsewhere)
        report.count_dispatch(outcome)
        if outcome != "not_mine":  # an attempt that was not this runner's to make costs nothing
            budget.spend()
        return False

    def _settle_abandoned(self, step: Step) -> None:
        now = self.clock()
        spent = step.state == "waiting" and step.attempts >= MAX_STEP_ATTEMPTS
        if spent and not step.under_live_claim(now):
            step.abandon(now)
            self.app.save(step)

    def _give_up(self, run: Run, step: Step, report: AdvanceReport) -> None:
        """A step that cannot succeed aborts the run; the cleanup leg follows."""
        reason = f"step {step.step_id} failed {times(step.attempts)}: {step.last_error}"
        self.ledger.abort_run(run.id, reason)
        report.aborted += 1

    def _move_on_when_ready(
        self, run: Run, spec: RunSpec, steps: list[Step], report: AdvanceReport
    ) -> None:
        when = ready_at(spec.phases[run.phase], steps)
        if when is not None and when <= self.clock():
            report.count_move(self.phases.move_on(run, spec, None))

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from runledger.application.errors import OUTAGES, BadRequest, Conflict
from runledger.application.modules.protocol import Registry
from runledger.application.services.dry_run import DryRunner
from runledger.application.services.inputs import person, reason
from runledger.application.services.leases import CoreLease
from runledger.application.services.ledger import Ledger
from runledger.application.services.running.dispatch import Dispatcher
from runledger.application.services.serving import ServedElsewhere, nowhere, served_nowhere
from runledger.application.services.spec_input import parse_spec
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.errors import RunNotRunning
from runledger.domain.progress import PhaseStatus, describe, ready_at, times
from runledger.domain.run import Origin, Run
from runledger.domain.spec import RunSpec
from runledger.domain.step import MAX_STEP_ATTEMPTS, Step
from runledger.domain.text import safe_text
from runledger.domain.values import MAX_SHOWN
from runledger.projections.queries import Queries

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


class Runs:
    """Runs executing their specs: starting, the advance leg, and a person's controls."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        queries: Queries,
        ledger: Ledger,
        dispatcher: Dispatcher,
        core_lease: CoreLease,
        registry: Registry,
        dry_runner: DryRunner,
        settings: Settings,
        clock: Callable[[], datetime],
        serving: Callable[[], ServedElsewhere] = served_nowhere,
    ) -> None:
        self.app = app
        self.streams = streams
        self.queries = queries
        self.ledger = ledger
        self.dispatcher = dispatcher
        self.core_lease = core_lease
        self.registry = registry
        self.dry_runner = dry_runner
        self.settings = settings
        self.clock = clock
        self.serving = serving
        self.elsewhere: ServedElsewhere = nowhere
        self._after: UUID | None = None
        self._first: list[UUID] = []

    def start(
        self, document: str | dict[str, Any], run_id: UUID | None = None, by: str | None = None
    ) -> UUID:
        """Check a spec as its dry run would, now, and start it; nothing is written if the spec
        is refused."""
        spec = parse_spec(document)
        starter = None if by is None else person(by, "starting a run")
        self.dry_runner.check_start(spec)
        run, steps = self._planned(spec, run_id or uuid4(), starter, None)
        self.app.save(run, *steps)
        return run.id

    def start_version(
        self,
        spec: dict[str, Any],
        run_id: UUID,
        by: str,
        origin: Origin,
        *also: Aggregate,
        refused: Sequence[str] = (),
    ) -> UUID:
        """Start a published version's spec (checked when it was authored) as ``run_id``, in
        one save with ``also`` (the occurrence that starts it): both are written, or neither.
        With ``refused`` problems the run is aborted before its first step, saying them."""
        run, steps = self._planned(RunSpec.stored(spec), run_id, by, origin)
        if refused:
            said = safe_text("; ".join(refused), MAX_SHOWN)
            run.abort(reason(f"not started: {said}"), self.clock())
        self.app.save(run, *steps, *also)
        return run_id

    def _planned(
        self, spec: RunSpec, run_id: UUID, by: str | None, origin: Origin | None
    ) -> tuple[Run, list[Step]]:
        """The run and its steps, ready to save together."""
        now = self.clock()
        run = Run.start(run_id, spec.name, now, spec.model_dump(mode="json"), by, origin)
        steps = [
            Step(run_id=run.id, step_id=s.id, phase=i, action=s.action, params=s.params, at=now)
            for i, phase in enumerate(spec.phases)
            for s in phase.steps
        ]
        return run, steps

    def advance(self, run_id: UUID, by: str) -> str:
        """A person advances the current phase once its steps are done."""
        person(by, "advancing a phase")
        run, spec = self._load(run_id)
        if run.is_terminal:
            raise RunNotRunning(f"run {run_id} has already ended ({run.status})")
        phase = spec.phases[run.phase]
        steps = self._steps(run, run.phase)
        if any(s.state != "done" for s in steps):
            raise Conflict(f"Phase {phase.id} has steps still to finish")
        return self._next_phase(run, spec, by)

    def describe(self, run_id: UUID) -> list[PhaseStatus]:
        run, spec = self._load(run_id)
        # Only the current phase's steps say anything (the others are done or not started):
        # loading every step of a 1,000-step run was 80 % of its run page.
        current = (
            spec.phases[run.phase].steps
            if run.status != "completed" and run.phase < len(spec.phases)
            else ()
        )
        steps = self.streams.load(Step, [Step.create_id(run.id, s.id) for s in current])
        return describe(spec, run, {s.step_id: s for s in steps.values()}, self.clock())

    def advance_leg(self, worker: str, stop: threading.Event | None = None) -> AdvanceReport:
        """Dispatch due steps, within the tick's bounds, and move phases on."""
        self.elsewhere = self.dispatcher.elsewhere = self.serving()
        report = AdvanceReport()
        budget = TickBudget(self.settings.steps_per_tick, self.settings.steps_per_run_tick)
        order = self._order()
        self._first = []
        for index, run_id in enumerate(order):
            if (stop is not None and stop.is_set()) or budget.spent:
                # Runs this tick did not reach go first in the next, so none waits for ever.
                self._first = order[index:] + self._first
                report.cut_short = budget.spent
                break
            try:
                if self._advance_run(run_id, worker, report, stop, budget):
                    self._first.append(run_id)
                    report.cut_short = True
            except (IntegrityError, RunNotRunning) as error:
                log.debug("run %s moved under another runner: %s", run_id, error)
            except OUTAGES:
                raise  # the store's trouble, not this run's: the runner says so once
            except Exception:  # one run's failure must not stall the others
                log.exception("advancing run %s failed; the leg goes on", run_id)
        return report

    def _order(self) -> list[UUID]:
        """The runs a tick looks at: those the last tick did not reach, then the next page."""
        first = self._first[: self.settings.advance_run_batch]
        page = [
            r
            for r in self._next_batch(self.settings.advance_run_batch - len(first))
            if r not in first
        ]
        random.shuffle(page)  # several runners start at different runs
        return first + page

    def _next_batch(self, size: int) -> list[UUID]:
        """The next ``size`` running runs after the last tick's, wrapping round, so runs that
        wait (for a person, for a long after_s) never starve the runs behind them."""
        if size <= 0:
            return []
        page = self.queries.running_runs_after(self._after, size)
        if len(page) < size and self._after is not None:
            page += [r for r in self.queries.running_runs(size - len(page)) if r not in page]
        self._after = page[-1] if page else None
        return page

    def _advance_run(
        self,
        run_id: UUID,
        worker: str,
        report: AdvanceReport,
        stop: threading.Event | None,
        budget: TickBudget,
    ) -> bool:
        """Advance one run; answers whether the tick's bound left due steps of it undispatched."""
        run, spec = self._load(run_id)
        if run.is_terminal:
            return False
        report.runs += 1
        budget.run_left = budget.per_run
        cut_short = False
        steps = self._steps(run, run.phase)
        for step in steps:
            if stop is not None and stop.is_set():
                return False
            self._settle_abandoned(step)
            if step.dispatchable(self.clock()):
                if budget.allows():
                    if self._dispatch(run, step, worker, report):
                        budget.spend()
                else:
                    cut_short = cut_short or budget.spent
            if step.gave_up:
                # A step that cannot succeed aborts the run; the cleanup leg follows.
                reason = f"step {step.step_id} failed {times(step.attempts)}: {step.last_error}"
                self.ledger.abort_run(run.id, reason)
                report.aborted += 1
                return False
        phase = spec.phases[run.phase]
        when = ready_at(phase, steps)
        if when is not None and when <= self.clock():
            outcome = self._next_phase(run, spec, None)
            report.phases_advanced += outcome == "advanced"
            report.completed += outcome == "completed"
        return cut_short

    def _settle_abandoned(self, step: Step) -> None:
        now = self.clock()
        spent = step.state == "waiting" and step.attempts >= MAX_STEP_ATTEMPTS
        if spent and not step.under_live_claim(now):
            step.abandon(now)
            self.app.save(step)

    def _dispatch(self, run: Run, step: Step, worker: str, report: AdvanceReport) -> bool:
        """One attempt at a step; answers False when it was not this runner's to make."""
        outcome = self.dispatcher.dispatch(run.id, step, worker)
        report.dispatched += outcome != "not_mine"
        report.succeeded += outcome == "succeeded"
        report.failed += outcome == "failed"
        return outcome != "not_mine"

    def _next_phase(self, run: Run, spec: RunSpec, by: str | None) -> str:
        if run.phase + 1 >= len(spec.phases):
            run.complete(self.clock(), by)
            self.app.save(run)
            return "completed"
        run.advance_phase(run.phase + 1, by, self.clock())
        self.app.save(run)
        return "advanced"

    def _load(self, run_id: UUID) -> tuple[Run, RunSpec]:
        run = self.ledger.get_run(run_id)
        if run.spec is None:
            raise BadRequest(f"run {run_id} was not started from a spec")
        return run, RunSpec.stored(run.spec)

    def _steps(self, run: Run, phase: int) -> list[Step]:
        spec = RunSpec.stored(run.spec)
        ids = [Step.create_id(run.id, s.id) for s in spec.phases[phase].steps]
        loaded = self.streams.load(Step, ids)
        return [loaded[i] for i in ids if i in loaded]

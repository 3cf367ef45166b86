from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from runledger.application.errors import Conflict
from runledger.application.modules.protocol import Registry
from runledger.application.services.dry_run import DryRunner
from runledger.application.services.inputs import person, reason
from runledger.application.services.leases import CoreLease
from runledger.application.services.ledger import Ledger
from runledger.application.services.phases import RunPhases
from runledger.application.services.running.advancing import AdvanceLeg, AdvanceReport
from runledger.application.services.running.dispatch import Dispatcher
from runledger.application.services.running.division import Share, everything
from runledger.application.services.running.rotation import RunRotation
from runledger.application.services.serving import ServedElsewhere, served_nowhere
from runledger.application.services.spec_input import parse_spec
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.errors import RunNotRunning
from runledger.domain.progress import PhaseStatus, describe
from runledger.domain.run import Origin, Run
from runledger.domain.spec import RunSpec
from runledger.domain.step import Step
from runledger.domain.text import safe_text
from runledger.domain.values import MAX_SHOWN
from runledger.projections.queries import Queries


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
        share: Callable[[], Share] = everything,
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
        self.phases = RunPhases(app=app, streams=streams, ledger=ledger, clock=clock)
        self.leg = AdvanceLeg(
            app=app,
            phases=self.phases,
            rotation=RunRotation(queries=queries, settings=settings, share=share),
            ledger=ledger,
            dispatcher=dispatcher,
            settings=settings,
            clock=clock,
            serving=serving,
        )

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
        run, spec = self.phases.load(run_id)
        if run.is_terminal:
            raise RunNotRunning(f"run {run_id} has already ended ({run.status})")
        phase = spec.phases[run.phase]
        steps = self.phases.steps(run, run.phase)
        if any(s.state != "done" for s in steps):
            raise Conflict(f"Phase {phase.id} has steps still to finish")
        return self.phases.move_on(run, spec, by)

    def describe(self, run_id: UUID) -> list[PhaseStatus]:
        run, spec = self.phases.load(run_id)
        # Only the current phase's steps say anything (the others are done or not started):
        # loading every step of a long run was most of its run page (scripts/MEASUREMENTS.md,
        # "A run's phases from its current phase's steps").
        current = (
            spec.phases[run.phase].steps
            if run.status != "completed" and run.phase < len(spec.phases)
            else ()
        )
        steps = self.streams.load(Step, [Step.create_id(run.id, s.id) for s in current])
        return describe(spec, run, {s.step_id: s for s in steps.values()}, self.clock())

    def advance_leg(
        self,
        worker: str,
        stop: threading.Event | None = None,
        beat: Callable[[], None] = lambda: None,
    ) -> AdvanceReport:
        """Dispatch due steps, within the tick's bounds, and move phases on; ``beat`` is said
        before each run (a runner's, so that the others see it live through a long leg)."""
        return self.leg.run(worker, stop, beat)

"""A run's phases as the ledger holds them: the run with its spec, a phase's steps, and the move
to the next phase, shared by a person's advance and the runner's advance leg."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal
from uuid import UUID

from runledger.application.errors import BadRequest
from runledger.application.services.ledger import Ledger
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.run import Run
from runledger.domain.spec import RunSpec
from runledger.domain.step import Step

Moved = Literal["advanced", "completed"]


class RunPhases:
    """Loads a run with its spec and a phase's steps, and moves the run on to its next phase."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        ledger: Ledger,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.streams = streams
        self.ledger = ledger
        self.clock = clock

    def load(self, run_id: UUID) -> tuple[Run, RunSpec]:
        run = self.ledger.get_run(run_id)
        if run.spec is None:
            raise BadRequest(f"run {run_id} was not started from a spec")
        return run, RunSpec.stored(run.spec)

    def steps(self, run: Run, phase: int) -> list[Step]:
        spec = RunSpec.stored(run.spec)
        ids = [Step.create_id(run.id, s.id) for s in spec.phases[phase].steps]
        loaded = self.streams.load(Step, ids)
        return [loaded[i] for i in ids if i in loaded]

    def move_on(self, run: Run, spec: RunSpec, by: str | None) -> Moved:
        """The next phase, or the run completed after its last."""
        if run.phase + 1 >= len(spec.phases):
            run.complete(self.clock(), by)
            self.app.save(run)
            return "completed"
        run.advance_phase(run.phase + 1, by, self.clock())
        self.app.save(run)
        return "advanced"

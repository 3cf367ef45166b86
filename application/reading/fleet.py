"""The answers every front end gives about the fleet: modules, runners and projections."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from runledger.application.errors import ProjectionStuck
from runledger.application.modules.loader import ModuleStatus
from runledger.application.reading.schemas import fleet as schema
from runledger.application.reading.shapes import projection
from runledger.application.services.fleet import Fleet
from runledger.projections.read_model import ReadModel


@dataclass(frozen=True, kw_only=True)
class FleetAnswers:
    fleet: Fleet
    projector: ReadModel
    fresh: Callable[[], object]
    """The read hook (Runledger.fresh): never the projector's catch_up, which would apply events
    in a process that is not the store's projector."""
    loaded: Sequence[ModuleStatus]
    clock: Callable[[], datetime]

    def modules(self) -> list[schema.Module]:
        return [schema.Module.model_validate(m) for m in self.loaded]

    def runners(self, limit: int = 100) -> list[schema.Runner]:
        """The ``limit`` runners that started last (at most the fleet's MAX_LISTED)."""
        found = self.fleet.listing(self.clock(), limit)
        return [schema.Runner.model_validate(r) for r in found]

    def projections(self) -> list[schema.Projection]:
        with contextlib.suppress(ProjectionStuck):  # the trial below says where
            self.fresh()
        stuck = {s.view: s for s in self.projector.trial()}
        head = self.projector.head()
        positions = sorted(self.projector.positions().items())
        return [projection(name, at, head, stuck.get(name)) for name, at in positions]

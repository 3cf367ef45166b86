"""One sweep call's own state, made per call and passed along, so that nothing of one call
stays on the long-lived Cleanup service for another to read."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from runledger.application.errors import OUTAGES
from runledger.application.services.pass_maker import PassMaker
from runledger.application.services.serving import ServedElsewhere
from runledger.application.services.sweep.pacing import Halt
from runledger.application.services.sweep.passes import Pass
from runledger.application.services.sweep.verdicts import Summary
from runledger.application.services.troubled_runs import TroubledRuns
from runledger.projections.rows import EntryRow, RunRow

log = logging.getLogger("runledger.cleanup")

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class SweepCall:
    """One sweep call: who serves what elsewhere, and each found run's row and page, read once
    before the call writes; its lanes each work a pass of their own from it."""

    passes: PassMaker
    troubled: TroubledRuns
    worker: str
    stop: Halt | None
    elsewhere: ServedElsewhere
    rows: dict[UUID, RunRow]
    pages: dict[UUID, list[Any]]

    def lane(self, run_ids: list[UUID]) -> tuple[dict[UUID, Summary], bool]:
        """One lane's runs worked by a pass of its own; whether it left work over."""
        one = self.passes.make(self.worker, self.elsewhere)

        def clean(run_id: UUID) -> Summary:
            run = self.rows.get(run_id)
            found = None if run is None else (run, [EntryRow.of(e) for e in self.pages[run_id]])
            return one.clean(run_id, found, self.worker, self.stop)

        swept = self._each(run_ids, clean, self.stop, self._lander(one))
        one.land()
        return swept, one.left_over

    def _each(
        self,
        run_ids: list[UUID],
        do: Callable[[UUID], T],
        stop: Halt | None,
        failed: Callable[[], None] | None = None,
    ) -> dict[UUID, T]:
        done: dict[UUID, T] = {}
        for run_id in run_ids:
            if stop is not None and stop.is_set():
                break
            try:
                done[run_id] = do(run_id)
            except OUTAGES:
                raise  # the store's trouble, not this run's: the runner says so once
            except Exception:  # one run's bad night must not stall the others
                log.exception("cleanup of run %s failed; the sweep goes on", run_id)
                self.troubled.note(run_id)
                if failed is not None:
                    failed()
        return done

    def _lander(self, one: Pass) -> Callable[[], None]:
        """After a run's failure, what the pass carries from the runs before it is saved on its
        own, run by run, so that their verdicts do not ride with a save that may fail again."""

        def land() -> None:
            carried, one.carried = one.carried, []
            by_run = {landing.run_id: landing for landing in carried}
            self._each(list(by_run), lambda r: one.land_one(by_run[r]), None)

        return land

"""Which running runs each tick of the advance leg looks at, and in what order."""

from __future__ import annotations

import random
from collections.abc import Callable
from uuid import UUID

from runledger.application.services.running.division import Current, Share, everything
from runledger.application.settings import Settings
from runledger.projections.queries import Queries


class RunRotation:
    """The runs a tick looks at: those the last tick did not reach, then the next page of running
    runs, wrapping round, so that runs that wait never starve the runs behind them. With other
    runners live, the page is this runner's share of a page as many times larger (division.py)."""

    def __init__(
        self, *, queries: Queries, settings: Settings, share: Callable[[], Share] = everything
    ) -> None:
        self.queries = queries
        self.settings = settings
        self.share = share
        self._after: UUID | None = None
        self._first: list[UUID] = []
        self.current: Current | None = None
        """The share of this tick's page, read again as the leg goes on."""

    def order(self) -> list[UUID]:
        """This tick's runs; the ones it leaves go first in the next tick."""
        batch = self.settings.advance_run_batch
        first = self._first[:batch]
        share = self.share()
        self.current = Current(self.share, share)
        page = share.of(self._next_batch((batch - len(first)) * share.parts))
        page = [r for r in page if r not in first]
        random.shuffle(page)  # several runners start at different runs
        self._first = []
        return first + page

    def still_mine(self, run_id: UUID) -> bool:
        """Whether a run of this tick's page is still this runner's: one that joined since the
        page was read takes its share of the runs (division.py, ``Current``)."""
        return self.current is None or self.current.mine(run_id)

    def unreached(self, run_ids: list[UUID]) -> None:
        """Runs this tick did not reach go first in the next, so none waits for ever."""
        self._first = run_ids + self._first

    def again(self, run_id: UUID) -> None:
        """A run whose due steps the tick's bound left undispatched goes first in the next."""
        self._first.append(run_id)

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

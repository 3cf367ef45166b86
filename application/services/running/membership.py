"""A runner's record in the store (Fleet): it joins with what it loaded, beats every tick, and
leaves however it stops."""

from __future__ import annotations

import logging
from uuid import UUID

from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.running.trouble import TROUBLE, StoreTrouble

log = logging.getLogger("runledger.runner")


class Membership:
    """One worker's row in the fleet: joined, beating, then left."""

    def __init__(
        self, *, fleet: Fleet, worker: str, loaded: Loaded, troubles: StoreTrouble
    ) -> None:
        self.fleet = fleet
        self.worker = worker
        self.loaded = loaded
        self.troubles = troubles
        self.runner_id: UUID | None = None

    def join(self) -> None:
        loaded = self.loaded
        self.runner_id = self.fleet.join(self.worker, loaded.modules, loaded.actions, loaded.leases)

    def beat(self) -> None:
        """Join until joined (a store that is away at start is trouble like any), then beat."""
        if self.runner_id is None:
            self.join()
        else:
            self.fleet.beat(self.runner_id)

    def leave(self) -> None:
        """Said once on the way out; a store that is away then leaves the runner to be shown
        as gone after the bound, which is what it is."""
        if self.runner_id is None:
            return
        try:
            self.fleet.leave(self.runner_id)
        except TROUBLE as error:
            log.warning(
                "could not record that runner %s stopped: %s",
                self.worker,
                self.troubles.sentence(error),
            )
        self.runner_id = None

"""A runner's record in the store (Fleet): it joins with what it loaded, beats every tick, and
leaves however it stops."""

from __future__ import annotations

import logging
import time
from uuid import UUID

from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.running.trouble import TROUBLE, StoreTrouble

log = logging.getLogger("runledger.runner")

AGAIN_S = 0.25
"""Beats between a tick's legs at most this often: each is a committed write."""


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
        self._beaten = time.monotonic()
        self.every_s = 1.0
        """Seconds between this runner's ticks: the others' bound for its share (division.py)."""
        self.failing = False
        """Its last tick failed: it does not beat until a tick ends well, so that the others
        take its share (division.py) rather than leave it to a runner that cannot work it."""

    def join(self, *, divides: bool = True) -> None:
        loaded = self.loaded
        self.runner_id = self.fleet.join(
            self.worker,
            loaded.modules,
            loaded.actions,
            loaded.leases,
            self.every_s,
            divides=divides,
        )

    def beat(self) -> bool:
        """Join until joined (a store that is away at start is trouble like any), then beat
        unless failing; answers whether it beat."""
        if self.runner_id is None:
            self.join()
        elif self.failing:
            return False
        else:
            self.fleet.beat(self.runner_id)
        return True

    def again(self) -> None:
        """A beat between legs, so a runner at work is seen live by a short bound and only one
        stuck in a call (or dead) has its share taken; nothing for a runner not joined."""
        now = time.monotonic()
        if self.runner_id is not None and not self.failing and now - self._beaten >= AGAIN_S:
            self.fleet.beat(self.runner_id)
            self._beaten = now

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

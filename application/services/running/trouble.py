"""The store's trouble as the runner says it: once when it starts, once when it clears.

While a projection is stuck the legs do not go on: they decide from the views (what is due,
what is retryable), and a view stopped before an event it cannot apply is stale about that
entry or run and everything after it. The runner says so once, keeps trying every tick (a
catch-up that finds the event unchanged only reads), and says once when it is clear.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from runledger.application.errors import (
    STORE_ERRORS,
    CannotCatchUp,
    NotInitialised,
    ProjectionStuck,
    RunledgerError,
    StoreError,
    store_error,
)
from runledger.application.settings import Settings
from runledger.application.store.url import store_config

log = logging.getLogger("runledger.runner")
T = TypeVar("T")

TROUBLE: tuple[type[BaseException], ...] = (
    ProjectionStuck,
    CannotCatchUp,
    StoreError,
    NotInitialised,
    *STORE_ERRORS,
)
"""What a tick can fail with that is the store's state, not a fault in this runner's code."""


class StoreTrouble:
    """What the runner has said of the store's trouble, so that it says each change once."""

    def __init__(self, *, settings: Settings) -> None:
        self.settings = settings
        self.sentence_now: str | None = None
        """The trouble as last said; None while the store is clear."""
        self.stuck = False

    def safely(self, work: Callable[[], T]) -> T | None:
        """The work's answer; None when it failed, said once for the store's trouble."""
        try:
            done = work()
        except TROUBLE as error:
            self._troubled(error)
            return None
        except Exception:  # a tick that fails is logged; the next one tries again
            log.exception("tick failed")
            return None
        self._cleared()
        return done

    def sentence(self, error: BaseException) -> RunledgerError:
        """The error as one sentence naming the store (store_error), for a log line."""
        try:
            config = store_config(self.settings.database_url)
        except RunledgerError:
            return store_error(error, "store")
        return store_error(error, config.display, config.env.get("SQLITE_DBNAME"))

    def _troubled(self, error: BaseException) -> None:
        """One line when the trouble starts (or turns from the store's into a stuck projection
        or back), not one every tick: an outage says "refused", then "closed", then "timed out"
        as it goes on, and is still one outage."""
        sentence = str(self.sentence(error))
        stuck = isinstance(error, ProjectionStuck)
        known = self.sentence_now is not None and self.stuck == stuck
        self.sentence_now, self.stuck = sentence, stuck
        if known:
            log.debug("still in trouble: %s", sentence)
            return
        if stuck:
            log.error("the legs wait until the projections can go on: %s", sentence)
        else:
            log.warning("the store is in trouble; trying again every tick: %s", sentence)

    def _cleared(self) -> None:
        if self.sentence_now is not None:
            log.warning("clear again, the runner goes on (it was: %s)", self.sentence_now)
            self.sentence_now = None

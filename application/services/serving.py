"""Who serves what: a runner acts only for the actions and leases it has loaded, and leaves the
rest to a live runner that serves them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from runledger.application.services.fleet import Fleet

ServedElsewhere = Callable[[str], bool]
"""Whether a live runner serves an action or lease id (asked only of what this one lacks)."""


def nowhere(_: str) -> bool:
    return False


def served_nowhere() -> ServedElsewhere:
    """For a store with no runner records to read: nothing is served anywhere else."""
    return nowhere


def unserved(need: str) -> str:
    """Why an attempt failed that no live runner could make: a retry, spaced by the back-off."""
    return f"no live runner serves {need}"


def served_by(fleet: Fleet, clock: Callable[[], datetime]) -> Callable[[], ServedElsewhere]:
    """What the live runners serve, read once per leg, when the leg first asks: a runner that
    has every module a run needs never asks, and never reads the runner records (a read, and a
    catch-up of the views before it, every sweep pass)."""

    def now() -> ServedElsewhere:
        read: list[ServedElsewhere] = []

        def elsewhere(need: str) -> bool:
            if not read:
                serving = fleet.serving(clock())
                read.append(lambda n: serving.serves_action(n) or serving.serves_lease(n))
            return read[0](need)

        return elsewhere

    return now

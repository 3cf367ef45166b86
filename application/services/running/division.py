"""Runners that share a store divide the runs between them, so that a run is loaded, tried and
swept by one runner a tick rather than by each (the claims keep it safe either way; this keeps
it cheap).

The rule, written once: a run belongs to the live runner with the highest weight for it
(rendezvous hashing of run id and runner id) among the runners whose kit (modules, actions and
leases loaded) is the same as this one's. Runners with another kit divide among themselves, so
each run is looked at by one runner per kit: dividing by what a run needs would mean loading it
first, which is the cost this saves, and a runner never leaves a run to one that serves less
than it does.

"Live" here is a short bound (a few ticks, at least FLOOR_S), not EVENT_RUNNER_GONE_S: a runner
beats before each tick, its cleanup leg and each sweep pass, so one that stops beating for a
second is dead or stuck in a call, and the others take its share meanwhile. A runner always
counts itself; overlap while the fleet changes is harmless (claims keep it safe), and a runner
that cannot read the fleet looks at everything.
The fleet is read from the runners view as it stands (a catch-up there would be one more a
tick; the tick's other reads catch it up): once per advance page and per cleanup leg, and
again while a leg goes on, at most every ``AGAIN_S`` (``Current``), so a runner that joined or
left shows within a fraction of a second even to a leg of many seconds.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from runledger.application.services.fleet import Fleet, Kit
from runledger.application.services.running.trouble import TROUBLE

log = logging.getLogger("runledger.runner")

AGAIN_S = 0.25
"""A leg reads the fleet again at most this often (``Current``), as often as a runner at work
beats (membership.py)."""
BEATS = 3
"""Beats a runner may miss before the others take its share."""
FLOOR_S = 1.0


def owner(run_id: UUID, runners: Collection[UUID]) -> UUID:
    """The runner a run belongs to: stable while the runners are, and a runner that goes moves
    only its own runs."""
    return max(runners, key=lambda runner_id: _weight(run_id, runner_id))


def _weight(run_id: UUID, runner_id: UUID) -> bytes:
    return hashlib.blake2b(run_id.bytes + runner_id.bytes, digest_size=8).digest()


@dataclass(frozen=True)
class Share:
    """This process's runners' part of the runs, as one read of the fleet saw it."""

    peers: Mapping[UUID, frozenset[UUID]]
    """Each runner of this process, with the live runners of its kit (itself among them).
    Empty: no runner of this process is joined, and everything is looked at."""

    @property
    def parts(self) -> int:
        """Into how many parts the runs are divided (1: everything is this process's)."""
        return min((len(group) for group in self.peers.values()), default=1)

    def mine(self, run_id: UUID) -> bool:
        if not self.peers:
            return True
        return any(owner(run_id, group) == ours for ours, group in self.peers.items())

    def of(self, run_ids: list[UUID]) -> list[UUID]:
        return [run_id for run_id in run_ids if self.mine(run_id)]


EVERYTHING = Share({})


class Division:
    """Reads the fleet's live runners and answers this process's share, once per call."""

    def __init__(self, *, fleet: Fleet, clock: Callable[[], datetime]) -> None:
        self.fleet = fleet
        self.clock = clock

    def share(self) -> Share:
        ours = dict(self.fleet.ours)
        if not ours:
            return EVERYTHING
        bound = max(FLOOR_S, BEATS * max(o.every_s for o in ours.values()))
        try:
            live = self.fleet.rows.beating_as_read(self.clock() - timedelta(seconds=bound))
        except TROUBLE as error:
            log.info("runners' share unread, so this one looks at every run: %s", error)
            return EVERYTHING
        kits = [(row.runner_id, Kit.of(row)) for row in live]
        return Share(
            {
                runner_id: frozenset({runner_id} | {r for r, kit in kits if kit == mine.kit})
                for runner_id, mine in ours.items()
            }
        )


class Current:
    """A leg's share, read again whenever the last read is ``AGAIN_S`` old. Runners started
    together each met a fleet without the others at their first tick, and a leg read once kept
    working every run for seconds: the others' runs were loaded again and their claims lost."""

    def __init__(self, read: Callable[[], Share], first: Share | None = None) -> None:
        self.read = read
        self._share = first if first is not None else read()
        self._at = time.monotonic()

    def share(self) -> Share:
        if time.monotonic() - self._at >= AGAIN_S:
            self._share = self.read()
            self._at = time.monotonic()
        return self._share

    def mine(self, run_id: UUID) -> bool:
        return self.share().mine(run_id)


def everything() -> Share:
    """For a store with no fleet to read (and tests of one runner): every run is looked at."""
    return EVERYTHING

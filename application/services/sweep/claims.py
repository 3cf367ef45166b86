"""Claiming a group's entries for one call: its budget plus the slack, in one worker's name."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.services.sweep.give_back import GiveBack
from runledger.application.services.sweep.groups import Group
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.resource import Resource


class Claims:
    """Claims a group in memory, to ride with a pass's next save; or entry by entry from fresh
    state, each saved on its own, once that save lost a race."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        give_back: GiveBack,
        settings: Settings,
        clock: Callable[[], datetime],
        worker: str,
    ) -> None:
        self.app = app
        self.streams = streams
        self.give_back = give_back
        self.settings = settings
        self.clock = clock
        self.worker = worker

    def claim(self, group: Group, loaded: dict[UUID, Resource]) -> None:
        """Claim the group in memory, for one call: its budget plus the slack."""
        now = self.clock()
        expires = self._expiry(group)
        max_attempts = self.settings.max_revert_attempts
        for row in group.rows:
            entry = loaded.get(row.entry_id)
            if entry is not None and entry.retryable(now, max_attempts):
                entry.claim_revert(self.worker, now, expires, max_attempts)
                group.claimed[entry.id] = entry

    def claim_each(self, group: Group) -> dict[UUID, Resource]:
        """The group's entries this worker won, each loaded fresh and claimed in a save of its
        own."""
        won: dict[UUID, Resource] = {}
        max_attempts = self.settings.max_revert_attempts
        for row in group.rows:
            fresh = self.streams.load(Resource, [row.entry_id]).get(row.entry_id)
            now = self.clock()
            if fresh is None or not fresh.retryable(now, max_attempts):
                continue
            fresh.claim_revert(self.worker, now, self._expiry(group), max_attempts)
            try:
                self.app.save(fresh)
            except IntegrityError:
                continue
            won[fresh.id] = fresh
        return won

    def _expiry(self, group: Group) -> datetime:
        slack = timedelta(seconds=self.settings.claim_slack_s)
        return self.clock() + self.give_back.budget(group) + slack

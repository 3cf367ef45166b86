"""How a pass is made for one call: the services it writes through, and what it leaves to
the live runners that serve what this one lacks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from runledger.application.services.serving import ServedElsewhere
from runledger.application.services.sweep.give_back import GiveBack
from runledger.application.services.sweep.groups import Group
from runledger.application.services.sweep.passes import Pass
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams


@dataclass(frozen=True, kw_only=True)
class PassMaker:
    """Makes a Pass for one call, given what that call read of who serves what elsewhere."""

    app: LedgerApp
    streams: Streams
    give_back: GiveBack
    settings: Settings
    clock: Callable[[], datetime]

    def make(
        self,
        worker: str,
        elsewhere: ServedElsewhere,
        leave: Callable[[Group], bool] | None = None,
    ) -> Pass:
        """A pass in ``worker``'s name; a group a live runner elsewhere serves (and this one does
        not), or that ``leave`` answers true for, is not worked."""

        def left(group: Group) -> bool:
            return not self.give_back.served_here(group) and elsewhere(self.give_back.needs(group))

        return Pass(
            app=self.app,
            streams=self.streams,
            give_back=self.give_back,
            settings=self.settings,
            clock=self.clock,
            worker=worker,
            left_to_others=left if leave is None else lambda g: leave(g) or left(g),
        )

"""One pass over the runs a sweep found: one call at a time, durable per call.

A group is claimed right before its call and its verdict saved right after, in the same save as
the next group's claim, so a worker killed mid-pass leaves its successor at most the call that was
in flight, and attempts count only calls made. The next group may be the next run's first: a
run's last verdict and its summary line ride with the next run's first claim (one save per call,
not one more per run), and what the pass still carries when it ends is saved then.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.services.sweep.claims import Claims
from runledger.application.services.sweep.from_rows import entry_from_row
from runledger.application.services.sweep.give_back import GiveBack
from runledger.application.services.sweep.groups import Group, group_entries
from runledger.application.services.sweep.judging import Judge
from runledger.application.services.sweep.pacing import Halt
from runledger.application.services.sweep.verdicts import Judged, Summary, swept_line
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.runlog import LogEntry
from runledger.projections.rows import EntryRow, RunRow
from runledger.projections.statements import PAGE

log = logging.getLogger("runledger.cleanup")

Work = tuple[RunRow, list[EntryRow]]
"""A run as a pass finds it: its row, and the page of its entries the pass may work."""


@dataclass
class Landing:
    """A run's last verdict (if its last call was judged) and its summary line, not yet saved:
    its ``summary`` counts the verdict once it is."""

    run_id: UUID
    judged: Judged | None
    summary: Summary
    line: LogEntry
    tried: bool = False
    """Its events went with a save: a save takes them off the aggregates, saved or not."""

    def objects(self) -> list[object]:
        if self.judged is None:
            return [self.line]
        return [*self.judged.group.claimed.values(), self.judged.line, self.line]


class Pass:
    """One pass over the runs a sweep found: groups claimed, given back and judged one call at a
    time, each verdict saved with the next call's claim."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        give_back: GiveBack,
        settings: Settings,
        clock: Callable[[], datetime],
        worker: str,
        left_to_others: Callable[[Group], bool],
    ) -> None:
        self.app = app
        self.give_back = give_back
        self.settings = settings
        self.clock = clock
        self.left_to_others = left_to_others
        self.claims = Claims(
            app=app,
            streams=streams,
            give_back=give_back,
            settings=settings,
            clock=clock,
            worker=worker,
        )
        self.judge = Judge(app=app, streams=streams, settings=settings, clock=clock, worker=worker)
        self.carried: list[Landing] = []
        self.left_over = False
        """A run's page held more than this pass may work: a next pass has more to do."""

    def clean(self, run_id: UUID, found: Work | None, by: str, stop: Halt | None) -> Summary:
        """Work one run's page, a bounded number of groups; its last save is carried."""
        if found is None:
            return Summary(by=by)
        running, rows = found
        # What another live runner serves is left to it: this one has not loaded it.
        groups = [g for g in group_entries(rows) if not self.left_to_others(g)]
        cap = self.settings.cleanup_groups_per_run
        self.left_over = self.left_over or len(groups) > cap or len(rows) >= PAGE
        groups = groups[:cap]
        summary = Summary(by=by, remaining=running.unresolved)
        # Built from the rows just read, not replayed: a row the stream has moved past loses
        # its claim's save to the version check, and that group is then claimed entry by entry.
        loaded = {row.entry_id: entry_from_row(row) for g in groups for row in g.rows}
        judged: Judged | None = None
        worked = False
        for group in groups:
            if stop is not None and stop.is_set():
                break
            self.claims.claim(group, loaded)
            self._save_then_claim(run_id, judged, group, summary)
            judged = None
            if group.claimed:
                worked = True
                judged = self.judge.judge(run_id, group, self.give_back.verdict(group))
        if worked:
            final = replace(summary)
            if judged is not None:
                final.add(judged.counts)
            self.carried.append(
                Landing(run_id, judged, summary, swept_line(run_id, final, self.clock()))
            )
        return summary

    def land(self) -> None:
        """Save what the pass still carries, each run on its own."""
        carried, self.carried = self.carried, []
        for landing in carried:
            self.land_one(landing)

    def _save_then_claim(
        self, run_id: UUID, previous: Judged | None, group: Group, summary: Summary
    ) -> None:
        """What is carried, the last call's verdict and the next call's claim in one save: the
        claim is durable before its call starts, and no claim is saved for a call that is not
        about to start."""
        carried, self.carried = self.carried, []
        before = [o for landing in carried for o in landing.objects()]
        if previous is not None:
            before += [*previous.group.claimed.values(), previous.line]
        claims = list(group.claimed.values())
        if not before and not claims:
            return
        for landing in carried:
            landing.tried = True
        try:
            self.app.save(*before, *claims)
        except IntegrityError:
            # Someone else moved an entry of one of them: settle each apart.
            for landing in carried:
                self.land_one(landing)
            if previous is not None:
                self.judge.settle_apart(run_id, previous, summary)
            group.claimed = self.claims.claim_each(group)
            return
        except BaseException:
            self.carried = carried + self.carried  # not saved: still the pass's to settle
            raise
        for landing in carried:
            if landing.judged is not None:
                landing.summary.add(landing.judged.counts)
        if previous is not None:
            summary.add(previous.counts)

    def land_one(self, landing: Landing) -> None:
        """A run's last verdict with its one summary line, saved on their own; or, once a save
        that held them failed, judged again on fresh state with a new line."""
        judged, summary = landing.judged, landing.summary
        if not landing.tried:
            landing.tried = True
            try:
                self.app.save(*landing.objects())
            except IntegrityError:  # someone else moved an entry while the call was out
                log.debug("run %s: its last verdict lost a race; judged again", landing.run_id)
            else:
                if judged is not None:
                    summary.add(judged.counts)
                return
        if judged is not None:
            self.judge.settle_apart(landing.run_id, judged, summary)
        self.app.save(swept_line(landing.run_id, summary, self.clock()))

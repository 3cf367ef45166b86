"""The runner's start leg: due occurrences start as runs of their pinned versions, each exactly
once however many runners tick, and whenever a runner comes back after none ran.

A start checks what a dry run checks; a version's spec was checked when it was authored (its
verified stamp says by whom), so what is left to ask at its time is what changes with time: a
lease target another run holds now. Such an occurrence waits, tick after tick, for the hold to
end; past HELD_WAIT it starts as a run aborted before its first step, saying who holds what.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.errors import OUTAGES
from runledger.application.services.dry_run import DryRunner
from runledger.application.services.runs import Runs
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.definition import Definition
from runledger.domain.occurrence import Occurrence, OccurrenceNotScheduled
from runledger.domain.run import Origin
from runledger.domain.spec import RunSpec
from runledger.projections.definitions import DefinitionRows

log = logging.getLogger("runledger.starts")
A = TypeVar("A")

START_BATCH = 50
"""Due occurrences one tick looks at; the rest are the next tick's (they stay due)."""
HELD_WAIT = timedelta(minutes=15)
"""How long past its time a due occurrence waits for a lease target another run holds. A live
lease of the holder may end sooner; a hold that lasts longer is a lease still being given back,
which a person must look at, and the aborted run then says so where people look."""


class TargetHeld(Exception):
    """A due occurrence waits: another run holds a target its run would lease now."""


@dataclass
class StartReport:
    started: list[UUID] = field(default_factory=list)
    """The runs this tick started."""
    already: int = 0
    """Due occurrences another runner started (or a person cancelled) first."""
    waiting: list[UUID] = field(default_factory=list)
    """Due occurrences waiting for a lease target another run holds."""


class Starts:
    def __init__(
        self,
        *,
        app: LedgerApp,
        rows: DefinitionRows,
        runs: Runs,
        dry_runner: DryRunner,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.rows = rows
        self.runs = runs
        self.dry_runner = dry_runner
        self.clock = clock
        self._said: set[UUID] = set()

    def start_leg(self, worker: str, stop: threading.Event | None = None) -> StartReport:
        report = StartReport()
        for row in self.rows.due(self.clock(), START_BATCH):
            if stop is not None and stop.is_set():
                break
            try:
                report.started.append(self.start(row.occurrence_id, worker))
                self._said.discard(row.occurrence_id)
            except TargetHeld as held:
                report.waiting.append(row.occurrence_id)
                if row.occurrence_id not in self._said:  # once, not every tick it waits
                    self._said.add(row.occurrence_id)
                    log.info("occurrence %s waits: %s", row.occurrence_id, held)
            except (IntegrityError, OccurrenceNotScheduled) as error:
                # The run's id comes from the occurrence: a second run would collide with it.
                log.info("occurrence %s already started: %s", row.occurrence_id, error)
                report.already += 1
            except OUTAGES:
                raise  # the store's trouble, not this occurrence's: the runner says so once
            except Exception:  # one occurrence's failure must not stall the others
                log.exception("starting occurrence %s failed; the leg goes on", row.occurrence_id)
        return report

    def start(self, occurrence_id: UUID, worker: str) -> UUID:
        """Start one due occurrence as a run of its pinned version: the run, its steps and the
        occurrence's Started are one save, so a crash leaves all of them or none."""
        occurrence = self._load(occurrence_id, Occurrence)
        now = self.clock()
        run_id = occurrence.start(worker, now)
        definition = self._load(occurrence.definition_id, Definition)
        version = definition.frozen(occurrence.pinned_version)
        if version is None:
            raise LookupError(
                f"{definition.name} has no version {occurrence.pinned_version} to start"
            )
        held = self.dry_runner.held_now(RunSpec.stored(version.spec))
        until = occurrence.due_at + HELD_WAIT
        if held and now < until:
            raise TargetHeld(
                f"{'; '.join(held)}; it starts when the hold ends, or at "
                f"{until:%Y-%m-%d %H:%M:%S} UTC as a run aborted before its first step"
            )
        stamp = occurrence.verified
        origin = Origin(
            definition=definition.name,
            version=version.number,
            occurrence_id=occurrence.id,
            verified_by=None if stamp is None else stamp.by,
            verified_at=None if stamp is None else stamp.at,
        )
        return self.runs.start_version(
            version.spec, run_id, worker, origin, occurrence, refused=held
        )

    def _load(self, aggregate_id: UUID, cls: type[A]) -> A:
        found: object = self.app.repository.get(aggregate_id)
        if not isinstance(found, cls):
            raise TypeError(f"{aggregate_id} is a {type(found).__name__}, not a {cls.__name__}")
        return found

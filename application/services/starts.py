"""The runner's start leg: due occurrences start as runs of their pinned versions, each exactly
once however many runners tick, and whenever a runner comes back after none ran."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.errors import OUTAGES
from runledger.application.services.runs import Runs
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.definition import Definition
from runledger.domain.occurrence import Occurrence, OccurrenceNotScheduled
from runledger.domain.run import Origin
from runledger.projections.definitions import DefinitionRows

log = logging.getLogger("runledger.starts")
A = TypeVar("A")

START_BATCH = 50
"""Due occurrences one tick looks at; the rest are the next tick's (they stay due)."""


@dataclass
class StartReport:
    started: list[UUID] = field(default_factory=list)
    """The runs this tick started."""
    already: int = 0
    """Due occurrences another runner started (or a person cancelled) first."""


class Starts:
    def __init__(
        self,
        *,
        app: LedgerApp,
        rows: DefinitionRows,
        runs: Runs,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.rows = rows
        self.runs = runs
        self.clock = clock

    def start_leg(self, worker: str, stop: threading.Event | None = None) -> StartReport:
        report = StartReport()
        for row in self.rows.due(self.clock(), START_BATCH):
            if stop is not None and stop.is_set():
                break
            try:
                report.started.append(self.start(row.occurrence_id, worker))
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
        run_id = occurrence.start(worker, self.clock())
        definition = self._load(occurrence.definition_id, Definition)
        version = definition.frozen(occurrence.pinned_version)
        if version is None:
            raise LookupError(
                f"{definition.name} has no version {occurrence.pinned_version} to start"
            )
        stamp = occurrence.verified
        origin = Origin(
            definition=definition.name,
            version=version.number,
            occurrence_id=occurrence.id,
            verified_by=None if stamp is None else stamp.by,
            verified_at=None if stamp is None else stamp.at,
        )
        return self.runs.start_version(version.spec, run_id, worker, origin, occurrence)

    def _load(self, aggregate_id: UUID, cls: type[A]) -> A:
        found: object = self.app.repository.get(aggregate_id)
        if not isinstance(found, cls):
            raise TypeError(f"{aggregate_id} is a {type(found).__name__}, not a {cls.__name__}")
        return found

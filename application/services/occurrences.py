"""Occurrences: scheduling a definition's latest version at a time, cancelling, and reading."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from runledger.application.errors import BadRequest, Conflict, NotFound
from runledger.application.services.definitions import Definitions
from runledger.application.services.inputs import person
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.occurrence import Occurrence, OccurrenceState
from runledger.projections.definitions import DefinitionRows, OccurrenceRow

PAST_GRACE = timedelta(minutes=5)
"""How far in the past a time to schedule may be (a person typing "now" is late by then)."""
MAX_AHEAD = timedelta(days=3_660)
MAX_LISTED = 1_000
TRIES = 3


class Occurrences:
    def __init__(
        self,
        *,
        app: LedgerApp,
        definitions: Definitions,
        rows: DefinitionRows,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.definitions = definitions
        self.rows = rows
        self.clock = clock

    def schedule(self, name: str, due_at: datetime, by: str) -> Occurrence:
        """Pin a new occurrence to the definition's latest version, with its verified stamp.
        The definition records it too, in the same save, so a publish racing this one either
        sees it (and re-pins it) or conflicts and looks again."""
        scheduler = person(by, "scheduling an occurrence")
        due = self._due(due_at)
        for _ in range(TRIES):
            now = self.clock()
            definition = self.definitions.get(name)
            occurrence_id = uuid4()
            latest = definition.note_scheduled(occurrence_id, due, scheduler, now)
            occurrence = Occurrence.schedule(
                occurrence_id, definition.id, definition.name, due, latest, scheduler, now
            )
            try:
                self.app.save(definition, occurrence)
            except IntegrityError:
                continue
            return occurrence
        raise Conflict(f"{name} kept changing while an occurrence was scheduled; try again")

    def cancel(self, occurrence_id: UUID, by: str) -> Occurrence:
        canceller = person(by, "cancelling an occurrence")
        occurrence = self.get(occurrence_id)
        occurrence.cancel(canceller, self.clock())
        try:
            self.app.save(occurrence)
        except IntegrityError:
            raise Conflict(
                f"occurrence {occurrence_id} changed while it was cancelled (it may have just "
                "started); read it again"
            ) from None
        return occurrence

    def get(self, occurrence_id: UUID) -> Occurrence:
        try:
            found: object = self.app.repository.get(occurrence_id)
        except AggregateNotFoundError:
            raise NotFound(f"no occurrence {occurrence_id}") from None
        if not isinstance(found, Occurrence):
            raise NotFound(f"no occurrence {occurrence_id}")
        return found

    def row(self, occurrence_id: UUID) -> OccurrenceRow:
        found = self.rows.occurrence(occurrence_id)
        if found is None:
            raise NotFound(f"no occurrence {occurrence_id}")
        return found

    def listing(
        self,
        name: str | None = None,
        state: OccurrenceState | None = None,
        limit: int = MAX_LISTED,
    ) -> list[OccurrenceRow]:
        """Occurrences in due order: of one definition (by name) or all, in one state or any."""
        definition_id = None if name is None else self.definitions.get(name).id
        return self.rows.occurrences(definition_id, state, limit)

    def _due(self, due_at: datetime) -> datetime:
        if due_at.tzinfo is None:
            raise BadRequest("at: a time to schedule must say its time zone (UTC if unsure)")
        due_at = due_at.astimezone(UTC)
        now = self.clock()
        if due_at < now - PAST_GRACE:
            raise BadRequest(
                f"at: {due_at:%Y-%m-%d %H:%M:%S} UTC is in the past; an occurrence is "
                "scheduled for a time still to come"
            )
        if due_at > now + MAX_AHEAD:
            raise BadRequest("at: an occurrence may be scheduled at most ten years ahead")
        return due_at

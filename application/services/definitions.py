"""Authoring definitions (W5): create and edit a draft, verify it by a dry run, publish it as a
frozen version that re-pins the definition's scheduled occurrences."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from runledger.application.errors import BadRequest, Conflict, NotFound
from runledger.application.services.dry_run import DryRunner
from runledger.application.services.inputs import person
from runledger.application.services.spec_input import parse_spec
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.definition import Definition, DraftChanged, DryRun, Version
from runledger.domain.occurrence import Occurrence
from runledger.domain.spec import NAME, RunSpec
from runledger.domain.text import safe_text
from runledger.projections.definitions import DefinitionRow, DefinitionRows

MAX_LISTED = 1_000
TRIES = 3
"""Publishing again on fresh state after a schedule, start or cancel raced it."""


@dataclass(frozen=True)
class Publication:
    version: Version
    repinned: list[UUID]


def definition_name(name: Any) -> str:
    """A definition's name as a path, a command line and a spec's step ids take it."""
    if not isinstance(name, str) or re.fullmatch(NAME, name) is None:
        shown = safe_text(repr(name), 80)
        raise BadRequest(
            f"name: {shown} is not a definition name (a letter or digit, then up to 63 "
            "letters, digits, '_', '.' or '-')"
        )
    return name


def draft_spec(document: str | dict[str, Any]) -> dict[str, Any]:
    """The validated spec, dumped from its model: what a draft stores and a fingerprint hashes.
    A refusal names the field under ``spec``."""
    try:
        spec = parse_spec(document)
    except BadRequest as error:
        said = str(error)
        field, sep, _ = said.partition(": ")
        named = sep and field and " " not in field
        raise BadRequest(f"spec.{said}" if named else f"spec: {said}") from None
    return spec.model_dump(mode="json")


class Definitions:
    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        rows: DefinitionRows,
        dry_runner: DryRunner,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.streams = streams
        self.rows = rows
        self.dry_runner = dry_runner
        self.clock = clock

    def create(self, name: str, document: str | dict[str, Any], by: str) -> Definition:
        author = person(by, "creating a definition")
        definition = Definition.create(
            definition_name(name), draft_spec(document), author, self.clock()
        )
        try:
            self.app.save(definition)
        except IntegrityError:
            raise Conflict(f"a definition named {name} already exists") from None
        return definition

    def edit(self, name: str, document: str | dict[str, Any], by: str) -> tuple[Definition, bool]:
        """Replace the draft; answers the definition and whether the draft changed."""
        author = person(by, "editing a definition")
        spec = draft_spec(document)
        definition = self.get(name)
        changed = definition.edit(spec, author, self.clock())
        self._save(definition, "edited")
        return definition, changed

    def verify(self, name: str, by: str) -> DryRun:
        """A dry run of the draft, recorded whether it passed or not."""
        reviewer = person(by, "verifying a definition")
        definition = self.get(name)
        starts = [o.due_at for o in self.rows.scheduled(definition.id)]
        problems = self.dry_runner.problems(RunSpec.stored(definition.draft), starts)
        dry_run = definition.record_dry_run(
            definition.fingerprint, problems, reviewer, self.clock()
        )
        self._save(definition, "verified")
        return dry_run

    def publish(self, name: str, by: str) -> Publication:
        """Freeze the draft as the next version and re-pin every occurrence of this definition
        still waiting to start, in one save: a schedule, start or cancel racing it makes the
        save conflict, and it is decided again on fresh state."""
        publisher = person(by, "publishing a definition")
        for _ in range(TRIES):
            now = self.clock()
            definition = self.get(name)
            version = definition.publish(publisher, now)
            waiting = [o.occurrence_id for o in self.rows.scheduled(definition.id)]
            loaded = self.streams.load(Occurrence, waiting)
            found = [loaded[i] for i in waiting if i in loaded]
            repinned = [o for o in found if o.state == "scheduled"]
            for occurrence in repinned:
                occurrence.repin(version, publisher, now)
            try:
                self.app.save(definition, *repinned)
            except IntegrityError:
                continue
            return Publication(version, [o.id for o in repinned])
        raise Conflict(f"{name} kept changing while it was published; try again")

    def get(self, name: str) -> Definition:
        try:
            found: object = self.app.repository.get(Definition.create_id(definition_name(name)))
        except (AggregateNotFoundError, BadRequest):
            raise NotFound(f"no definition named {safe_text(name, 80)}") from None
        if not isinstance(found, Definition):
            raise NotFound(f"no definition named {safe_text(name, 80)}")
        return found

    def version(self, name: str, number: int) -> Version:
        definition = self.get(name)
        found = definition.frozen(number)
        if found is None:
            raise NotFound(f"{name} has no version {number} ({len(definition.versions)} published)")
        return found

    def row(self, definition_id: UUID) -> DefinitionRow:
        found = self.rows.one(definition_id)
        if found is None:
            raise NotFound(f"no definition {definition_id}")
        return found

    def listing(self, limit: int = MAX_LISTED) -> list[DefinitionRow]:
        return self.rows.listing(limit)

    def _save(self, definition: Definition, what: str) -> None:
        try:
            self.app.save(definition)
        except IntegrityError:
            raise DraftChanged(
                f"{definition.name} changed while it was {what}; read it again and retry"
            ) from None

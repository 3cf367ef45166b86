"""Definitions (W5): an authored spec's draft, the dry runs that checked it, and its frozen
versions, each stamped verified exactly when the dry run vouches for the very spec it froze."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import DomainError
from runledger.domain.ids import natural_id


class DraftChanged(DomainError):
    """The draft was edited while a dry run checked it: that dry run vouches for nothing."""


class NothingPublished(DomainError):
    """The definition has no published version to schedule."""


def fingerprint(spec: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace) of a validated spec, dumped
    from its model: formatting and defaults left out never change it; any edit does."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class Stamp:
    """Who verified, and when: the passing dry run's reviewer and time."""

    by: str
    at: datetime


def stamp_of(by: str | None, at: datetime | None) -> Stamp | None:
    """The stamp two stored fields hold, both or neither."""
    return None if by is None or at is None else Stamp(by, at)


@dataclass(frozen=True)
class DryRun:
    number: int
    revision: int
    """The draft's revision it checked: 1 at creation, one more at each edit."""
    fingerprint: str
    problems: tuple[str, ...]
    by: str
    at: datetime

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class Version:
    number: int
    spec: dict[str, Any]
    fingerprint: str
    by: str
    at: datetime
    verified: Stamp | None


def verification(draft: str, revision: int, passing: DryRun | None) -> Stamp | None:
    """W5: the stamp a draft of fingerprint ``draft`` at ``revision`` is published with. The
    latest passing dry run vouches for it exactly when it checked this fingerprint and no edit
    came after it (an edit back to an earlier spec is still an edit)."""
    if passing is None or passing.fingerprint != draft or passing.revision != revision:
        return None
    return Stamp(passing.by, passing.at)


class DefinitionView:
    """The read side of ``Definition``: a view of what its events recorded."""

    fingerprint: str
    revision: int
    passing: DryRun | None
    versions: list[Version]

    @property
    def verified(self) -> Stamp | None:
        """The stamp the draft would be published with now."""
        return verification(self.fingerprint, self.revision, self.passing)

    @property
    def latest(self) -> Version | None:
        return self.versions[-1] if self.versions else None

    def frozen(self, number: int) -> Version | None:
        return self.versions[number - 1] if 1 <= number <= len(self.versions) else None


def require_unchanged(definition: Definition, checked: str) -> None:
    """A dry run vouches only for the draft it checked: refuse it once the draft was edited."""
    if checked != definition.fingerprint:
        raise DraftChanged(
            f"the draft of {definition.name} was edited while it was being verified; verify again"
        )


def require_published(definition: Definition) -> Version:
    """The version an occurrence is pinned to: the latest, so there must be one."""
    latest = definition.latest
    if latest is None:
        raise NothingPublished(
            f"{definition.name} has no published version to schedule; publish it first"
        )
    return latest


class Definition(DefinitionView, Aggregate):
    """One definition, by its unique name: the draft authors edit, the dry runs recorded on it,
    and the versions published from it. A version never changes once published."""

    class Created(Aggregate.Created):
        name: str
        spec: dict[str, Any]
        fingerprint: str
        by: str
        at: datetime

    class Edited(Aggregate.Event):
        spec: dict[str, Any]
        fingerprint: str
        by: str
        at: datetime

    class DryRunRecorded(Aggregate.Event):
        revision: int
        fingerprint: str
        problems: list[str]
        by: str
        at: datetime

    class Published(Aggregate.Event):
        version: int
        spec: dict[str, Any]
        fingerprint: str
        verified_by: str | None
        verified_at: datetime | None
        by: str
        at: datetime

    class Scheduled(Aggregate.Event):
        """An occurrence was pinned to this definition's latest version. Recorded here too, so
        that a publish racing a schedule conflicts on this stream instead of leaving the new
        occurrence pinned to the version before."""

        occurrence_id: UUID
        due_at: datetime
        by: str
        at: datetime

    @staticmethod
    def create_id(name: str) -> UUID:
        return natural_id("definition", name)

    @classmethod
    def create(cls, name: str, spec: dict[str, Any], by: str, at: datetime) -> Definition:
        return cls._create(
            cls.Created,
            id=cls.create_id(name),
            name=name,
            spec=spec,
            fingerprint=fingerprint(spec),
            by=by,
            at=at,
        )

    @event(Created)
    def __init__(
        self, name: str, spec: dict[str, Any], fingerprint: str, by: str, at: datetime
    ) -> None:
        self.name = name
        self.created_by = by
        self.created_at = at
        self.draft = spec
        self.fingerprint = fingerprint
        self.revision = 1
        self.edited_by = by
        self.edited_at = at
        self.dry_runs: list[DryRun] = []
        self.passing: DryRun | None = None
        self.versions: list[Version] = []
        self.scheduled = 0

    def edit(self, spec: dict[str, Any], by: str, at: datetime) -> bool:
        """Replace the draft; answers False (and records nothing) when the spec is the same."""
        changed = fingerprint(spec)
        if changed == self.fingerprint:
            return False
        self._edited(spec=spec, fingerprint=changed, by=by, at=at)
        return True

    def record_dry_run(self, checked: str, problems: list[str], by: str, at: datetime) -> DryRun:
        """Record a dry run of the draft whose fingerprint was ``checked``."""
        require_unchanged(self, checked)
        self._dry_run_recorded(
            revision=self.revision, fingerprint=checked, problems=problems, by=by, at=at
        )
        return self.dry_runs[-1]

    def publish(self, by: str, at: datetime) -> Version:
        """Freeze the draft as the next version, verified when a dry run vouches for it."""
        stamp = self.verified
        self._published(
            version=len(self.versions) + 1,
            spec=copy.deepcopy(self.draft),
            fingerprint=self.fingerprint,
            verified_by=None if stamp is None else stamp.by,
            verified_at=None if stamp is None else stamp.at,
            by=by,
            at=at,
        )
        return self.versions[-1]

    def note_scheduled(
        self, occurrence_id: UUID, due_at: datetime, by: str, at: datetime
    ) -> Version:
        """Record an occurrence scheduled; answers the version it is pinned to (the latest)."""
        latest = require_published(self)
        self._scheduled(occurrence_id=occurrence_id, due_at=due_at, by=by, at=at)
        return latest

    @event(Edited)
    def _edited(self, spec: dict[str, Any], fingerprint: str, by: str, at: datetime) -> None:
        self.draft = spec
        self.fingerprint = fingerprint
        self.revision += 1
        self.edited_by = by
        self.edited_at = at

    @event(DryRunRecorded)
    def _dry_run_recorded(
        self, revision: int, fingerprint: str, problems: list[str], by: str, at: datetime
    ) -> None:
        found = DryRun(len(self.dry_runs) + 1, revision, fingerprint, tuple(problems), by, at)
        self.dry_runs.append(found)
        if found.passed:
            self.passing = found

    @event(Published)
    def _published(
        self,
        version: int,
        spec: dict[str, Any],
        fingerprint: str,
        verified_by: str | None,
        verified_at: datetime | None,
        by: str,
        at: datetime,
    ) -> None:
        stamp = stamp_of(verified_by, verified_at)
        self.versions.append(Version(version, spec, fingerprint, by, at, stamp))

    @event(Scheduled)
    def _scheduled(self, occurrence_id: UUID, due_at: datetime, by: str, at: datetime) -> None:
        self.scheduled += 1

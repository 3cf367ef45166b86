"""Definitions (W5) and their occurrences, as the API answers and accepts them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, AliasChoices, AwareDatetime, ConfigDict, Field

from runledger.application.reading.schemas.common import Answer, Ask, Page
from runledger.application.reading.schemas.specs import Spec
from runledger.domain.occurrence import OccurrenceState
from runledger.domain.spec import NAME

SPEC = "a run's spec, as `runledger start` reads it"


class Stamp(Answer):
    """Who verified, and when: the passing dry run's reviewer and time."""

    by: str
    at: datetime


class NewDefinition(Ask):
    name: str = Field(
        min_length=1,
        max_length=64,
        json_schema_extra={"pattern": NAME},
        description="unique; a letter or digit, then letters, digits, '_', '.' or '-'",
    )
    spec: Spec = Field(description=SPEC)


class Draft(Ask):
    spec: Spec = Field(description=SPEC)


def _in_utc(value: datetime) -> datetime:
    """The time in UTC. One a datetime cannot hold in UTC (year 1 ahead of UTC, year 9999
    behind it) is the nearest it can, which the clock's rule then refuses (409), not a 500."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return (datetime.min if value.year == 1 else datetime.max).replace(tzinfo=UTC)


class NewOccurrence(Ask):
    at: Annotated[AwareDatetime, AfterValidator(_in_utc)] = Field(
        description="when it starts (with its time zone)"
    )


class DryRun(Answer):
    number: int
    revision: int = Field(description="the draft's revision it checked")
    passed: bool
    fingerprint: str
    problems: list[str]
    by: str
    at: datetime


class VersionSummary(Answer):
    version: int
    fingerprint: str
    published_by: str
    published_at: datetime
    verified: Stamp | None = Field(description="null: published unverified")


class VersionPage(Page[VersionSummary]):
    pass


class VersionDetail(VersionSummary):
    spec: dict[str, Any] = Field(description="frozen: never changes")


class DefinitionSummary(Answer):
    definition_id: UUID
    name: str
    created_by: str
    created_at: datetime
    revision: int
    fingerprint: str = Field(description="the draft's: sha256 of its validated spec")
    edited_by: str
    edited_at: datetime
    dry_runs: int
    last_dry_run_passed: bool | None
    last_dry_run_at: datetime | None
    draft_verified: Stamp | None = Field(
        description="the stamp publishing the draft now would give; null: it would be unverified"
    )
    versions: int
    published_at: datetime | None
    latest_verified: Stamp | None
    scheduled: int = Field(description="occurrences ever scheduled")


class DefinitionPage(Page[DefinitionSummary]):
    pass


class DefinitionDetail(Answer):
    definition_id: UUID
    name: str
    created_by: str
    created_at: datetime
    revision: int
    fingerprint: str
    edited_by: str
    edited_at: datetime
    draft: dict[str, Any]
    draft_verified: Stamp | None = Field(
        description="the stamp publishing the draft now would give; null: it would be unverified"
    )
    versions: list[VersionSummary]
    dry_runs: list[DryRun] = Field(description="oldest first")


class DraftSaved(Answer):
    name: str
    changed: bool = Field(description="false: the spec was the draft already; nothing recorded")
    revision: int
    fingerprint: str
    draft_verified: Stamp | None


class Verified(Answer):
    """A dry run, recorded on the draft whether it passed or not."""

    # SPEC: verify answers `draftRecorded` (as the system this replaces does).
    model_config = ConfigDict(serialize_by_alias=True)

    draft_recorded: bool = Field(
        validation_alias=AliasChoices("draftRecorded", "draft_recorded"),
        serialization_alias="draftRecorded",
    )
    fingerprint: str
    problems: list[str] = Field(description="each names its field: phases.0.steps.1.params.count")
    passed: bool
    reviewer: str
    at: datetime
    dry_run: int = Field(description="its number on this definition")


class Published(Answer):
    version: int
    verified: bool
    verified_by: str | None
    verified_at: datetime | None
    fingerprint: str
    repinned: list[UUID] = Field(description="the occurrences now pinned to this version")
    message: str


class Occurrence(Answer):
    occurrence_id: UUID
    definition: str
    definition_id: UUID
    due_at: datetime
    state: OccurrenceState
    version: int = Field(description="the definition version it is pinned to")
    verified: Stamp | None = Field(description="the pinned version's; null: unverified")
    scheduled_by: str
    scheduled_at: datetime
    run_id: UUID | None
    started_by: str | None
    started_at: datetime | None
    cancelled_by: str | None
    cancelled_at: datetime | None


class OccurrencePage(Page[Occurrence]):
    pass

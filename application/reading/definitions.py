"""The answers about definitions and occurrences the API and the CLI's --json give, built from
the services' reads (reading.py's counterpart for W5)."""

from __future__ import annotations

from runledger.application.reading.schemas import definitions as schema
from runledger.application.services.definitions import Publication
from runledger.domain.definition import Definition, DryRun, Stamp, Version
from runledger.projections.definitions import DefinitionRow, OccurrenceRow


def stamp(found: Stamp | None) -> schema.Stamp | None:
    return None if found is None else schema.Stamp(by=found.by, at=found.at)


def summary(row: DefinitionRow) -> schema.DefinitionSummary:
    return schema.DefinitionSummary(
        definition_id=row.definition_id,
        name=row.name,
        created_by=row.created_by,
        created_at=row.created_at,
        revision=row.revision,
        fingerprint=row.fingerprint,
        edited_by=row.edited_by,
        edited_at=row.edited_at,
        dry_runs=row.dry_runs,
        last_dry_run_passed=row.last_dry_run_passed,
        last_dry_run_at=row.last_dry_run_at,
        draft_verified=stamp(row.draft_verified),
        versions=row.versions,
        published_at=row.published_at,
        latest_verified=stamp(row.latest_verified),
        scheduled=row.scheduled,
    )


def version_summary(found: Version) -> schema.VersionSummary:
    return schema.VersionSummary(
        version=found.number,
        fingerprint=found.fingerprint,
        published_by=found.by,
        published_at=found.at,
        verified=stamp(found.verified),
    )


def version_detail(found: Version) -> schema.VersionDetail:
    return schema.VersionDetail(**version_summary(found).model_dump(), spec=found.spec)


def dry_run(found: DryRun) -> schema.DryRun:
    return schema.DryRun(
        number=found.number,
        revision=found.revision,
        passed=found.passed,
        fingerprint=found.fingerprint,
        problems=list(found.problems),
        by=found.by,
        at=found.at,
    )


def detail(found: Definition) -> schema.DefinitionDetail:
    return schema.DefinitionDetail(
        definition_id=found.id,
        name=found.name,
        created_by=found.created_by,
        created_at=found.created_at,
        revision=found.revision,
        fingerprint=found.fingerprint,
        edited_by=found.edited_by,
        edited_at=found.edited_at,
        draft=found.draft,
        draft_verified=stamp(found.verified),
        versions=[version_summary(v) for v in found.versions],
        dry_runs=[dry_run(d) for d in found.dry_runs],
    )


def draft_saved(found: Definition, changed: bool) -> schema.DraftSaved:
    return schema.DraftSaved(
        name=found.name,
        changed=changed,
        revision=found.revision,
        fingerprint=found.fingerprint,
        draft_verified=stamp(found.verified),
    )


def verified(found: DryRun) -> schema.Verified:
    return schema.Verified(
        draft_recorded=True,
        fingerprint=found.fingerprint,
        problems=list(found.problems),
        passed=found.passed,
        reviewer=found.by,
        at=found.at,
        dry_run=found.number,
    )


def published(name: str, found: Publication) -> schema.Published:
    version, stamped = found.version, found.version.verified
    repinned = f"; {len(found.repinned)} scheduled occurrence(s) re-pinned to it"
    if stamped is None:
        said = (
            f"{name} version {version.number} published unverified: no passing dry run of "
            "this draft since its last edit; nothing was stamped"
        )
    else:
        said = (
            f"{name} version {version.number} published verified by {stamped.by} "
            f"at {stamped.at:%Y-%m-%d %H:%M:%S} UTC"
        )
    return schema.Published(
        version=version.number,
        verified=stamped is not None,
        verified_by=None if stamped is None else stamped.by,
        verified_at=None if stamped is None else stamped.at,
        fingerprint=version.fingerprint,
        repinned=found.repinned,
        message=said + repinned,
    )


def occurrence(row: OccurrenceRow) -> schema.Occurrence:
    return schema.Occurrence(
        occurrence_id=row.occurrence_id,
        definition=row.definition,
        definition_id=row.definition_id,
        due_at=row.due_at,
        state=row.state,
        version=row.version,
        verified=stamp(row.verified),
        scheduled_by=row.scheduled_by,
        scheduled_at=row.scheduled_at,
        run_id=row.run_id,
        started_by=row.started_by,
        started_at=row.started_at,
        cancelled_by=row.cancelled_by,
        cancelled_at=row.cancelled_at,
    )

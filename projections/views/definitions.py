"""The definitions view: one row per definition, its draft, its last dry run, the passing dry run
that may vouch for the draft, and its latest version. Specs stay in the events."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.definition import Definition
from runledger.projections.views.base import Row, RowView, epoch, require


@singledispatch
def apply_definition(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the definitions view does not know {type(event).__name__}")


@apply_definition.register
def _(event: Definition.Created, row: Row | None) -> Row:
    return {
        "definition_id": str(event.originator_id),
        "name": event.name,
        "created_by": event.by,
        "created_at": epoch(event.at),
        "revision": 1,
        "fingerprint": event.fingerprint,
        "edited_by": event.by,
        "edited_at": epoch(event.at),
        "dry_runs": 0,
        "last_dry_run_passed": None,
        "last_dry_run_by": None,
        "last_dry_run_at": None,
        "passed_revision": None,
        "passed_fingerprint": None,
        "passed_by": None,
        "passed_at": None,
        "versions": 0,
        "published_by": None,
        "published_at": None,
        "latest_fingerprint": None,
        "latest_verified_by": None,
        "latest_verified_at": None,
        "scheduled": 0,
        "version": event.originator_version,
    }


@apply_definition.register
def _(event: Definition.Edited, row: Row | None) -> Row:
    found = require(row, event)
    return found | {
        "revision": found["revision"] + 1,
        "fingerprint": event.fingerprint,
        "edited_by": event.by,
        "edited_at": epoch(event.at),
        "version": event.originator_version,
    }


@apply_definition.register
def _(event: Definition.DryRunRecorded, row: Row | None) -> Row:
    found = require(row, event)
    passed = not event.problems
    changed = found | {
        "dry_runs": found["dry_runs"] + 1,
        "last_dry_run_passed": int(passed),
        "last_dry_run_by": event.by,
        "last_dry_run_at": epoch(event.at),
        "version": event.originator_version,
    }
    if passed:
        changed |= {
            "passed_revision": event.revision,
            "passed_fingerprint": event.fingerprint,
            "passed_by": event.by,
            "passed_at": epoch(event.at),
        }
    return changed


@apply_definition.register
def _(event: Definition.Published, row: Row | None) -> Row:
    return require(row, event) | {
        "versions": event.version,
        "published_by": event.by,
        "published_at": epoch(event.at),
        "latest_fingerprint": event.fingerprint,
        "latest_verified_by": event.verified_by,
        "latest_verified_at": epoch(event.verified_at),
        "version": event.originator_version,
    }


@apply_definition.register
def _(event: Definition.Scheduled, row: Row | None) -> Row:
    found = require(row, event)
    return found | {"scheduled": found["scheduled"] + 1, "version": event.originator_version}


class DefinitionsView(RowView):
    name = "definitions"
    table = "rl_definitions"
    key = "definition_id"
    columns = (
        "definition_id",
        "name",
        "created_by",
        "created_at",
        "revision",
        "fingerprint",
        "edited_by",
        "edited_at",
        "dry_runs",
        "last_dry_run_passed",
        "last_dry_run_by",
        "last_dry_run_at",
        "passed_revision",
        "passed_fingerprint",
        "passed_by",
        "passed_at",
        "versions",
        "published_by",
        "published_at",
        "latest_fingerprint",
        "latest_verified_by",
        "latest_verified_at",
        "scheduled",
        "version",
    )
    events = (
        Definition.Created,
        Definition.Edited,
        Definition.DryRunRecorded,
        Definition.Published,
        Definition.Scheduled,
    )
    apply = apply_definition

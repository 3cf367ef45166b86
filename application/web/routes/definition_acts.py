"""What an operator may do to a definition from its pages: verify its draft, publish it,
schedule it, cancel one of its occurrences. The sentence each confirmation says, doing it in the
person's name, and the sentence that says what came of it.

An outcome travels to the page after the redirect in the session (a signed cookie): only this
module writes it, and the page shows it as text, so nothing sent can become markup."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import Request

from runledger.application.errors import BadRequest
from runledger.application.reading import definitions as answer
from runledger.application.reading.schemas import definitions as schema
from runledger.application.services.definitions import Definitions
from runledger.application.services.occurrences import Occurrences
from runledger.application.web.routes.acts import Foreseen
from runledger.application.web.routes.definition_view import SHORT, placed, waiting
from runledger.application.web.words import when
from runledger.domain.definition import Definition, DryRun, Stamp
from runledger.domain.text import safe_text

Act = Literal["verify", "publish", "schedule"]
LABELS: dict[str, str] = {
    "verify": "Verify",
    "publish": "Publish",
    "schedule": "Schedule",
    "cancel": "Cancel occurrence",
}
SHOWN_PROBLEMS = 3
"""Problems an outcome names; the page lists every one under its dry run."""


def stamped(stamp: Stamp | schema.Stamp | None) -> str:
    return "unverified" if stamp is None else f"verified by {stamp.by} at {when(stamp.at)}"


def plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def moment(at: str) -> datetime:
    """A time from the schedule form: the picker's (no zone: UTC, as its label says) or an ISO
    time with its zone. BadRequest names the field."""
    if not at.strip():
        raise BadRequest("at: a time is needed, like 2026-12-24T18:00 (UTC)")
    try:
        found = datetime.fromisoformat(at.strip())
    except ValueError:
        shown = safe_text(repr(at), 60)
        raise BadRequest(f"at: {shown} is not a time like 2026-12-24T18:00 (UTC)") from None
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)


def foresee(
    occurrences: Occurrences, definition: Definition, act: str, by: str, at: datetime | None
) -> Foreseen:
    """Exactly what pressing the button will do, or why it can do nothing now."""
    name, by = f"'{definition.name}'", safe_text(by, 120)
    if act == "verify":
        again = (
            f" The draft is {stamped(definition.verified)} already; this checks it again."
            if definition.verified
            else ""
        )
        return Foreseen(
            f"Verify {name}: a dry run of its draft (revision {definition.revision}, fingerprint "
            f"{definition.fingerprint[:SHORT]}) against the modules loaded here and the live "
            f"runners'; nothing is performed and no world changes. It is recorded in the name "
            f"{by}, passed or not; when it passes, the next publish of this draft is verified by "
            f"{by}.{again}",
            True,
        )
    if act == "publish":
        return _publish(occurrences, definition, name, by)
    latest = definition.latest
    if latest is None:
        return Foreseen(f"{name} has no published version to schedule: publish it first.", False)
    return Foreseen(
        f"Schedule {name} at {when(at)}, pinned to its latest version {latest.number} "
        f"({stamped(latest.verified)}), in the name {by}. Until it starts, publishing a new "
        "version re-pins it to that version.",
        True,
    )


def _publish(occurrences: Occurrences, definition: Definition, name: str, by: str) -> Foreseen:
    number, stamp = len(definition.versions) + 1, definition.verified
    if stamp is None:
        said = (
            f"Publish {name} as version {number}, in the name {by}: it will be published "
            f"UNVERIFIED, stamped by no one: no dry run has passed on this draft since its last "
            f"edit (revision {definition.revision}, by {definition.edited_by} at "
            f"{when(definition.edited_at)}). Verify it first to publish it verified."
        )
    else:
        said = (
            f"Publish {name} as version {number}, in the name {by}: it will be VERIFIED by "
            f"{stamp.by} at {when(stamp.at)} (the dry run that passed on this very draft)."
        )
    latest = definition.latest
    if latest is not None and latest.fingerprint == definition.fingerprint:
        said += f" Its spec is the same as version {latest.number}'s."
    count = waiting(occurrences, definition.name)
    if count:
        said += (
            f" {plural(count, 'scheduled occurrence', 'scheduled occurrences')} not yet started "
            f"will be re-pinned to version {number} and marked {stamped(stamp)}."
        )
    else:
        said += " No scheduled occurrence waits to be re-pinned."
    return Foreseen(said, True)


def foresee_cancel(occurrence: schema.Occurrence, by: str) -> Foreseen:
    what = (
        f"the occurrence of '{occurrence.definition}' due at {when(occurrence.due_at)} "
        f"(version {occurrence.version}, {stamped(occurrence.verified)})"
    )
    if occurrence.state == "started":
        return Foreseen(f"{what.capitalize()} has already started its run.", False)
    if occurrence.state == "cancelled":
        return Foreseen(
            f"{what.capitalize()} was cancelled by {occurrence.cancelled_by} at "
            f"{when(occurrence.cancelled_at)}.",
            False,
        )
    return Foreseen(
        f"Cancel {what}, in the name {safe_text(by, 120)}: it will not start. Nothing else of "
        "the definition changes.",
        True,
    )


def verify(definitions: Definitions, name: str, by: str) -> Outcome:
    dry_run = definitions.verify(name, by=by)
    said = _verified(definitions, name, dry_run)
    return Outcome(said, "done" if dry_run.passed else "problems")


def _verified(definitions: Definitions, name: str, dry_run: DryRun) -> str:
    said = f"Dry run {dry_run.number} by {dry_run.by} at {when(dry_run.at)}"
    if dry_run.passed:
        return (
            f"{said} passed: fingerprint {dry_run.fingerprint[:SHORT]}. Publishing this draft "
            f"now stamps the version verified by {dry_run.by}."
        )
    problems = placed(list(dry_run.problems), definitions.get(name).draft)
    named = [
        (f"step {p.step}: " if p.step else "") + safe_text(p.said, 200)
        for p in problems[:SHOWN_PROBLEMS]
    ]
    more = len(problems) - len(named)
    return (
        f"{said} found {plural(len(problems), 'problem', 'problems')}, so the draft is not "
        f"verified: {'; '.join(named)}" + (f"; and {more:,} more (listed below)." if more else ".")
    )


def publish(definitions: Definitions, name: str, by: str) -> Outcome:
    publication = definitions.publish(name, by=by)
    return Outcome(answer.published(name, publication).message)


def schedule(occurrences: Occurrences, name: str, by: str, at: datetime) -> Outcome:
    made = occurrences.schedule(name, at, by=by)
    return Outcome(
        f"Scheduled '{name}' at {when(made.due_at)} by {by}: occurrence "
        f"{str(made.id).split('-')[0]}, pinned to version {made.pinned_version} "
        f"({stamped(made.verified)})."
    )


def cancel(occurrences: Occurrences, occurrence_id: UUID, by: str) -> Outcome:
    made = occurrences.cancel(occurrence_id, by=by)
    return Outcome(
        f"Cancelled by {by}: the occurrence of '{made.definition}' due at {when(made.due_at)} "
        "will not start."
    )


Tone = Literal["done", "problems", "refused"]


@dataclass(frozen=True)
class Outcome:
    said: str
    tone: Tone = "done"


def keep_outcome(request: Request, where: str, outcome: Outcome) -> None:
    """The outcome for the page at ``where`` after the redirect (POST, then 303, then GET)."""
    request.session["definition_outcome"] = {
        "page": where,
        "said": safe_text(outcome.said, 1_000),
        "tone": outcome.tone,
    }


def outcome_of(request: Request, where: str) -> Outcome | None:
    """The outcome kept for this page, shown once."""
    found: Any = request.session.get("definition_outcome")
    if not isinstance(found, dict) or found.get("page") != where:
        return None
    request.session.pop("definition_outcome")
    said, tone = found.get("said"), found.get("tone")
    if not isinstance(said, str) or tone not in ("done", "problems", "refused"):
        return None
    return Outcome(said, tone)

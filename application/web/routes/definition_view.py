"""What the definition pages show: a definition read by name or id, the line diff of its draft
against its latest version, its dry runs' problems placed on their steps, and the next occurrence
of each definition."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import Depends
from markupsafe import Markup

from runledger.application.deps import DefinitionsDep, Now, OccurrencesDep
from runledger.application.errors import NotFound
from runledger.application.reading import definitions as answer
from runledger.application.reading.schemas import definitions as schema
from runledger.application.services.definitions import Definitions
from runledger.application.services.occurrences import MAX_LISTED, Occurrences
from runledger.domain.definition import Definition
from runledger.domain.text import safe_text

MAX_SPEC_SHOWN = 20_000
"""Characters of a spec's JSON a page shows; `runledger def show` has the rest."""
MAX_DIFF_LINES = 2_000
"""Lines of a diff a page shows."""
MAX_COMPARED = 20_000
"""Lines of JSON on either side beyond which the page does not compare them."""
MAX_LINE = 400
MAX_ROWS = 100
"""Versions and dry runs a definition's page lists, newest first; `runledger def show` has all."""
SHORT = 12
"""Hex digits of a fingerprint a page shows: enough to tell two drafts apart by eye."""

_STEP = re.compile(r"^phases\.(\d+)(?:\.steps\.(\d+))?(?=[.:])")

Sign = Literal["+", "-", " "]


def canonical(spec: dict[str, Any]) -> str:
    """A spec's canonical form (sorted keys, as its fingerprint hashes it), a key a line."""
    return json.dumps(spec, sort_keys=True, indent=2, allow_nan=False)


def shown_spec(spec: dict[str, Any]) -> Markup:
    """A spec's canonical JSON for a <pre>: escaped here so its line breaks stay, and bounded."""
    text = canonical(spec)
    if len(text) > MAX_SPEC_SHOWN:
        text = text[:MAX_SPEC_SHOWN] + f"\n… ({len(text) - MAX_SPEC_SHOWN:,} more characters)"
    return Markup.escape(text)


@dataclass(frozen=True)
class Line:
    sign: Sign
    text: str

    @property
    def said(self) -> str:
        return {"+": "added", "-": "removed", " ": "same"}[self.sign]


@dataclass(frozen=True)
class Hunk:
    head: str
    lines: list[Line]


@dataclass(frozen=True)
class Diff:
    """The draft against a version: hunks of lines, each marked added, removed or the same."""

    against: int | None
    same: bool
    hunks: list[Hunk]
    added: int
    removed: int
    cut: int = 0
    """Lines of the diff left off the page."""
    too_big: bool = False


def diff(draft: dict[str, Any], latest: schema.VersionDetail | None) -> Diff:
    if latest is None:
        return Diff(None, False, [], 0, 0)
    old, new = canonical(latest.spec).splitlines(), canonical(draft).splitlines()
    if old == new:
        return Diff(latest.version, True, [], 0, 0)
    if max(len(old), len(new)) > MAX_COMPARED:
        return Diff(latest.version, False, [], 0, 0, too_big=True)
    hunks: list[Hunk] = []
    shown = added = removed = cut = 0
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(3):
        lines: list[Line] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [Line(" ", _bounded(t)) for t in old[i1:i2]]
                continue
            lines += [Line("-", _bounded(t)) for t in old[i1:i2]]
            lines += [Line("+", _bounded(t)) for t in new[j1:j2]]
            removed, added = removed + i2 - i1, added + j2 - j1
        room = MAX_DIFF_LINES - shown
        if room <= 0:
            cut += len(lines)
            continue
        cut += max(len(lines) - room, 0)
        lines = lines[:room]
        shown += len(lines)
        hunks.append(Hunk(_head(group), lines))
    return Diff(latest.version, False, hunks, added, removed, cut)


def _head(group: list[tuple[str, int, int, int, int]]) -> str:
    first, last = group[0], group[-1]
    return f"version lines {_span(first[1], last[2])}, draft lines {_span(first[3], last[4])}"


def _span(start: int, end: int) -> str:
    return f"{start + 1} to {end}" if end > start + 1 else f"{end}" if end > start else "none"


def _bounded(text: str) -> str:
    return safe_text(text, MAX_LINE)


@dataclass(frozen=True)
class Problem:
    """A dry run's problem, with the step (and phase) its field belongs to when the spec it
    checked is at hand."""

    said: str
    step: str | None
    phase: str | None


def placed(problems: list[str], checked: dict[str, Any] | None) -> list[Problem]:
    return [_place(p, checked) for p in problems]


def _place(problem: str, checked: dict[str, Any] | None) -> Problem:
    found = _STEP.match(problem)
    if found is None or checked is None:
        return Problem(problem, None, None)
    try:
        phase = checked["phases"][int(found.group(1))]
        step = None if found.group(2) is None else phase["steps"][int(found.group(2))]["id"]
        return Problem(problem, None if step is None else str(step), str(phase["id"]))
    except (KeyError, IndexError, TypeError):
        return Problem(problem, None, None)


@dataclass(frozen=True)
class Shown:
    """A definition as its page shows it."""

    detail: schema.DefinitionDetail
    latest: schema.VersionDetail | None
    draft: Markup
    diff: Diff
    versions: list[schema.VersionSummary]
    """Newest first, at most MAX_ROWS."""
    dry_runs: list[tuple[schema.DryRun, list[Problem]]]
    """Newest first, at most MAX_ROWS."""
    occurrences: list[schema.Occurrence]
    waiting: int
    """Occurrences scheduled and not started: what a publish re-pins."""

    @property
    def name(self) -> str:
        return self.detail.name


@dataclass(frozen=True, kw_only=True)
class Catalogue:
    """What a definition's page reads and its acts use: the definitions, their occurrences, and
    the request's moment (where the schedule form's time picker starts)."""

    definitions: Definitions
    occurrences: Occurrences
    now: datetime


async def _catalogue(
    definitions: DefinitionsDep, occurrences: OccurrencesDep, now: Now
) -> Catalogue:
    return Catalogue(definitions=definitions, occurrences=occurrences, now=now)


CatalogueDep = Annotated[Catalogue, Depends(_catalogue)]


def found(definitions: Definitions, key: str) -> Definition:
    """A definition by its name, or else by its id."""
    try:
        return definitions.get(key)
    except NotFound:
        try:
            definition_id = UUID(key)
        except ValueError:
            raise NotFound(f"no definition named {safe_text(key, 80)}") from None
        return definitions.get(definitions.row(definition_id).name)


def shown(occurrences: Occurrences, definition: Definition) -> Shown:
    detail = answer.detail(definition)
    latest = definition.latest
    version = None if latest is None else answer.version_detail(latest)
    specs = {v.fingerprint: v.spec for v in definition.versions}
    specs[definition.fingerprint] = definition.draft
    listed = [answer.occurrence(r) for r in occurrences.listing(definition.name)]
    return Shown(
        detail=detail,
        latest=version,
        draft=shown_spec(definition.draft),
        diff=diff(definition.draft, version),
        versions=detail.versions[::-1][:MAX_ROWS],
        dry_runs=[
            (d, placed(d.problems, specs.get(d.fingerprint)))
            for d in detail.dry_runs[::-1][:MAX_ROWS]
        ],
        occurrences=listed,
        waiting=waiting(occurrences, definition.name),
    )


def waiting(occurrences: Occurrences, name: str) -> int:
    return len(occurrences.listing(name, "scheduled", MAX_LISTED))


def next_occurrences(
    occurrences: Occurrences, summaries: list[schema.DefinitionSummary]
) -> dict[str, schema.Occurrence]:
    """Each definition's next scheduled occurrence, by name: one read of every scheduled one in
    due order, and one more per definition only when that read was cut at its limit."""
    scheduled = occurrences.listing(None, "scheduled", MAX_LISTED)
    found: dict[str, schema.Occurrence] = {}
    for row in scheduled:
        found.setdefault(row.definition, answer.occurrence(row))
    if len(scheduled) == MAX_LISTED:
        for summary in summaries:
            if summary.name not in found:
                first = occurrences.listing(summary.name, "scheduled", 1)
                if first:
                    found[summary.name] = answer.occurrence(first[0])
    return found

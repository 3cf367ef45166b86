"""The bulk cleanup page's filters as a form, read into the API's own Selector, and what applying
a plan will do, in one sentence, said before it is done."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from runledger.application.errors import BadQuery
from runledger.application.plain import counted, entries
from runledger.application.reading.schemas import bulk
from runledger.domain.text import safe_text

FIELDS = ("module", "action", "run_status", "cleanup_status", "ended_after", "ended_before")
TIMES = ("ended_after", "ended_before")
RUN_STATUSES = ("completed", "cancelled", "aborted")
CLEANUP_STATUSES = ("incomplete", "pending")
"""What a bulk plan's cleanup filter may say: it selects ended runs, whose pending is under way."""


@dataclass(frozen=True)
class Filters:
    """The form as typed (to show it again) and the Selector it says."""

    typed: dict[str, str]
    selector: bulk.Selector

    @property
    def query(self) -> dict[str, str]:
        return {k: v for k, v in self.typed.items() if v}


def filters(given: Mapping[str, Any]) -> Filters:
    """The filters a form or a query gave; "" is "any". A bad one is BadQuery naming its field."""
    typed = {f: str(given.get(f) or "").strip() for f in FIELDS}
    fields: dict[str, Any] = {f: v for f, v in typed.items() if v and f not in TIMES}
    for field in TIMES:
        if typed[field]:
            fields[field] = _moment(field, typed[field])
    try:
        selector = bulk.Selector.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "filters"
        raise BadQuery(f"{where}: {safe_text(str(first['msg']), 300)}") from None
    return Filters(typed, selector)


def _moment(field: str, text: str) -> datetime:
    """A time from the form's picker (no zone: UTC, as the page says) or with its zone."""
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        shown = safe_text(repr(text), 60)
        raise BadQuery(f"{field}: {shown} is not a time like 2026-12-02T12:00 (UTC)") from None
    return found.replace(tzinfo=UTC) if found.tzinfo is None else found


def foreseen(plan: bulk.Plan, by: str) -> str:
    """Exactly what applying ``plan`` will do, in the name ``by``."""
    held = sum(1 for run in plan.runs for entry in run.entries if entry.held is not None)
    asked = plan.entries - held
    said = (
        f"Apply plan {plan.fingerprint[:12]}: ask the modules again for {entries(asked)} of "
        f"{counted(len(plan.runs), 'run')}, each run's cleanup retried in the name "
        f"{safe_text(by, 120)}"
    )
    if held:
        lease = "lease entry" if held == 1 else "lease entries"
        said += (
            f"; {held:,} {lease} will not be restored, because another live run holds the target"
        )
    return said + "."

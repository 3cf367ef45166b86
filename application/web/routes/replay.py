"""A run as of a chosen time: every event up to then in store order, and its entries' states."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from runledger.application.deps import HistoryDep
from runledger.application.errors import BadQuery
from runledger.application.reading import shapes
from runledger.application.reading.schemas import history
from runledger.application.web import words
from runledger.application.web.render import choice, page
from runledger.application.web.session import Reader
from runledger.domain.text import safe_text

router = APIRouter(include_in_schema=False)
Show = Literal["time", "event"]


@dataclass(frozen=True)
class Group:
    state: str
    entries: list[history.EntryState]


@router.get("/runs/{run_id}/replay", response_class=HTMLResponse)
def replay_page(
    request: Request,
    history_: HistoryDep,
    actor: Reader,
    run_id: UUID,
    as_of: Annotated[str, Query(max_length=40)] = "",
    event: Annotated[int | None, Query(ge=0, le=100_000_000)] = None,
    show: Annotated[str, Query(max_length=10)] = "",
) -> HTMLResponse:
    everything = shapes.replay(history_.replay(run_id))
    times = sorted({line.at for line in everything.lines})
    chosen = _chosen(choice("show", show, Show), _moment(as_of), event, times)
    began = times[0]
    if chosen is None:
        then = everything
    elif chosen < began:
        then = None
    else:
        then = shapes.replay(history_.replay(run_id, chosen))
    return page(
        request,
        "replay_then.html" if request.headers.get("HX-Request") == "true" else "replay.html",
        actor,
        run=everything,
        then=then,
        as_of=chosen,
        began=began,
        picked=(chosen or times[-1]).strftime("%Y-%m-%dT%H:%M:%S"),
        times=times,
        position=max(bisect_right(times, chosen) - 1, 0) if chosen is not None else len(times) - 1,
        groups=_groups(then.entries if then else []),
    )


def _chosen(
    show: Show | None, as_of: datetime | None, event: int | None, times: list[datetime]
) -> datetime | None:
    """The moment asked for: the time picker's, or the time of the slider's event (the form
    has both; its buttons, or htmx for the slider, say which one was meant)."""
    if event is not None and (show == "event" or (show is None and as_of is None)):
        if event >= len(times):
            raise BadQuery(f"event: the run's events are at positions 0 to {len(times) - 1}")
        return times[event]
    return as_of


def _moment(as_of: str) -> datetime | None:
    """A time from the picker (no zone: UTC, as the page says) or an ISO time with its zone.
    A time to the second means the whole of that second, as the page shows times."""
    if not as_of:
        return None
    try:
        found = datetime.fromisoformat(as_of)
    except ValueError:
        shown = safe_text(repr(as_of), 60)
        raise BadQuery(f"as_of: {shown} is not a time like 2025-06-01T12:30:00 (UTC)") from None
    found = found.replace(tzinfo=UTC) if found.tzinfo is None else found.astimezone(UTC)
    return found.replace(microsecond=999_999) if found.microsecond == 0 else found


def _groups(entries: list[history.EntryState]) -> list[Group]:
    ordered = sorted(entries, key=lambda e: (words.state_order(e.state), e.name))
    return [Group(state, list(group)) for state, group in groupby(ordered, lambda e: e.state)]

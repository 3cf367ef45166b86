"""`runledger runners`: every runner as it recorded itself, and whether it is still there."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.text import Text

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, within
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.reading.schemas import fleet
from runledger.application.services.fleet import MAX_LISTED
from runledger.application.settings import Settings

STATE_STYLE = {"live": "green", "gone": "red", "stopped": "bright_black"}
WIDE = 140
"""Columns below which runners are listed a few lines each, not as a table that cuts cells."""


def runners(
    limit: Annotated[int, typer.Option(help=f"how many, at most {MAX_LISTED:,}")] = 50,
    as_json: AsJson = False,
) -> None:
    """List the runners that started last, newest first: live, gone or stopped."""
    guarded(lambda: within("--limit", limit, MAX_LISTED))
    with guarded(opened) as door:
        found = guarded(lambda: door.runners(limit))
    now = datetime.now(UTC)
    if as_json:
        print_json(found)
    elif not found:
        console.print("No runners have recorded themselves yet.")
    else:
        # The server's setting is not in its answer; the one here says the same unless changed.
        gone_s = guarded(Settings.from_env).runner_gone_s
        if console.width < WIDE:
            console.print(f"Runners (gone after {gone_s} s without a beat)")
            for info in found:
                console.print(_lines(info, now))
        else:
            console.print(_table(found, now, gone_s))


def _lines(info: fleet.Runner, now: datetime) -> Text:
    """A runner in three lines: who and where, since when; then what it serves."""
    said = Text(safe_text(info.worker), style="bold")
    said.append("  ")
    said.append(safe_text(info.state), style=STATE_STYLE[info.state])
    said.append(f"  {safe_text(info.host)} pid {info.pid}")
    said.append(
        f"\n  started {info.started_at:%Y-%m-%d %H:%M:%S} · last heartbeat "
        f"{safe_text(ago(info.last_beat, now))}"
    )
    said.append(f"\n  modules: {_listed(info.modules) or '-'} · actions: ")
    said.append(f"{_listed(info.actions) or '-'} · leases: {_listed(info.leases) or '-'}")
    return said


def _table(found: list[fleet.Runner], now: datetime, gone_s: int) -> Table:
    table = Table(
        "worker",
        "host",
        "pid",
        "started",
        "last heartbeat",
        "state",
        "modules",
        "actions",
        "leases",
        title=f"Runners (gone after {gone_s} s without a beat)",
    )
    for info in found:
        table.add_row(
            *(
                Text(safe_text(cell))
                for cell in (
                    info.worker,
                    info.host,
                    str(info.pid),
                    f"{info.started_at:%Y-%m-%d %H:%M:%S}",
                    ago(info.last_beat, now),
                )
            ),
            Text(safe_text(info.state), style=STATE_STYLE[info.state]),
            *(Text(_listed(names)) for names in (info.modules, info.actions, info.leases)),
        )
    return table


def _listed(names: list[str]) -> str:
    return safe_text(", ".join(safe_text(name) for name in names))


def ago(moment: datetime | None, now: datetime) -> str:
    """How long ago, in the largest whole unit that fits: "12 s ago", "3 min ago"."""
    if moment is None:
        return "never"
    seconds = int((now - moment).total_seconds())
    if seconds < 0:
        return "just now"  # its clock is ahead of this one
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"

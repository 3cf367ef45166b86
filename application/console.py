"""How runs, their phases, entries and logs look in a terminal."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from rich.console import Console
from rich.table import Table

from application.bootstrap import Runledger
from application.errors import BadRequest
from projections.queries import RunRow

STATUS_STYLE = {"complete": "green", "pending": "yellow", "incomplete": "red",
                "not_required": "dim"}
LINE_STYLE = {"cleanup.reverted": "green", "resource.expired": "green", "cleanup.failed": "red",
              "cleanup.drifted": "dark_orange", "resource.orphaned": "dark_orange",
              "cleanup.kept": "bright_black", "cleanup.swept": "cyan", "cleanup.retry": "magenta",
              "step.failed": "red", "step.succeeded": "blue"}


def show_runs(console: Console, rl: Runledger, run_ids: list[UUID], *, with_log: bool) -> None:
    rows = rl.queries.runs(run_ids, rl.clock(), rl.settings.max_revert_attempts)
    table = Table("run", "status", "cleanup", "entries", "unresolved", title="Runs")
    for row in rows:
        style = STATUS_STYLE[row.cleanup_status]
        table.add_row(row.name, row.status, f"[{style}]{row.cleanup_status}[/]",
                      str(row.entries), str(row.unresolved))
    console.print(table)
    if with_log:
        for row in rows:
            show_run(console, rl, row)


def show_run(console: Console, rl: Runledger, run: RunRow) -> None:
    console.print(f"\n[bold]{run.name}[/] [dim]{run.run_id}[/] — {run.status}, "
                  f"cleanup [{STATUS_STYLE[run.cleanup_status]}]{run.cleanup_status}[/]")
    try:
        phases = rl.runs.describe(run.run_id)
    except BadRequest:
        phases = []
    for phase in phases:
        console.print(f"  {phase.headline}")
        if phase.why_not_advanced and run.status == "running":
            console.print(f"    [dim]Why this phase has not advanced:[/] {phase.why_not_advanced}")
    for line in rl.queries.log(run.run_id):
        style = LINE_STYLE.get(line.kind, "white")
        console.print(f"  {line.at:%H:%M:%S} [{style}]{line.kind:<18}[/] {describe(line.detail)}")
    for entry in rl.queries.unresolved_entries(run.run_id):
        plural = "s" if entry.attempts != 1 else ""
        why = entry.last_error or "not yet tried"
        if entry.terminal or entry.status == "drifted":
            why = f"not retried: {why}"
        console.print(
            f"  [red]left:[/] {entry.name} {entry.status}, {entry.attempts} attempt{plural} — {why}"
        )


def describe(detail: dict[str, Any]) -> str:
    parts = []
    for key, value in detail.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{key}={value}")
    return "  ".join(parts)

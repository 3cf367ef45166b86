from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from uuid import UUID

import typer
from rich.console import Console
from rich.table import Table

from application.bootstrap import Runledger, bootstrap, init_store
from application.demo import DemoWorld, stage_runs, sweep_until_settled
from application.errors import RunledgerError
from application.modules import Registry
from domain.errors import DomainError
from projections.queries import RunRow

app = typer.Typer(help="runledger: what a game-event run changed, and giving all of it back.",
                  no_args_is_help=True, add_completion=False)
console = Console(highlight=False)
T = TypeVar("T")

STATUS_STYLE = {"complete": "green", "pending": "yellow", "incomplete": "red",
                "not_required": "dim"}
LINE_STYLE = {"cleanup.reverted": "green", "resource.expired": "green", "cleanup.failed": "red",
              "cleanup.drifted": "dark_orange", "resource.orphaned": "dark_orange",
              "cleanup.kept": "bright_black", "cleanup.swept": "cyan", "cleanup.retry": "magenta"}


def _guarded(action: Callable[[], T]) -> T:
    try:
        return action()
    except (RunledgerError, DomainError) as error:
        console.print(f"[red]runledger:[/] {error}")
        raise typer.Exit(2) from None


@app.command()
def init() -> None:
    """Create the store's tables (safe to run again)."""
    where = _guarded(init_store)
    console.print(f"Ready: {where}")


@app.command()
def demo() -> None:
    """Ledger a handful of runs against a small built-in world, sweep them, and show the result."""
    logging.basicConfig(level=logging.WARNING)
    where = _guarded(init_store)
    world = DemoWorld()
    registry = Registry()
    world.register(registry)
    with _guarded(lambda: bootstrap(registry=registry)) as rl:
        console.print(f"[bold]runledger demo[/] on the {where}\n")
        runs = stage_runs(rl, world)
        sweeps = sweep_until_settled(rl, "demo-runner")
        console.print(f"Swept {sweeps} times, as the runner's ticks would.\n")
        _show_runs(rl, runs)
        console.print("\nThe stall keeper answers again; [bold]ops[/] asks for cleanup once more:")
        world.stall_fixed = True
        summary = rl.cleanup.manual_cleanup(runs[1], "ops")
        console.print(f"  {summary}\n")
        _show_runs(rl, runs, with_log=False)
        calls = {key.split(":", 1)[1]: n for key, n in world.calls.items()}
        console.print(f"\nRevert calls per step: {calls}")
        console.print(f"Weather now: {world.weather} (south stays as the game master left it)")


@app.command()
def runs(limit: Annotated[int, typer.Option(help="how many runs")] = 20) -> None:
    """List recent runs with their cleanup status."""
    with _guarded(bootstrap) as rl:
        rl.projector.catch_up()
        ids = _recent_runs(rl, limit)
        if not ids:
            console.print("No runs yet.")
            return
        _show_runs(rl, ids, with_log=False)


@app.command()
def log(run_id: UUID) -> None:
    """Show one run's log."""
    with _guarded(bootstrap) as rl:
        rl.projector.catch_up()
        if rl.queries.run(run_id, rl.clock(), rl.settings.max_revert_attempts) is None:
            console.print(f"[red]runledger:[/] no run {run_id}")
            raise typer.Exit(2)
        _show_runs(rl, [run_id])


def _recent_runs(rl: Runledger, limit: int) -> list[UUID]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(
            rl.backend.sql("SELECT run_id FROM {rl_runs} ORDER BY started_at DESC LIMIT %s"),
            [limit],
        )
        return [UUID(row["run_id"]) for row in cursor.fetchall()][::-1]


def _show_runs(rl: Runledger, run_ids: list[UUID], with_log: bool = True) -> None:
    rows = rl.queries.runs(run_ids, rl.clock(), rl.settings.max_revert_attempts)
    table = Table("run", "status", "cleanup", "entries", "unresolved", title="Runs")
    for row in rows:
        style = STATUS_STYLE[row.cleanup_status]
        table.add_row(row.name, row.status, f"[{style}]{row.cleanup_status}[/]",
                      str(row.entries), str(row.unresolved))
    console.print(table)
    if with_log:
        for row in rows:
            _show_log(rl, row)


def _show_log(rl: Runledger, run: RunRow) -> None:
    console.print(f"\n[bold]{run.name}[/] [dim]{run.run_id}[/]")
    for line in rl.queries.log(run.run_id):
        style = LINE_STYLE.get(line.kind, "white")
        console.print(f"  {line.at:%H:%M:%S} [{style}]{line.kind:<18}[/] {_describe(line.detail)}")
    for entry in rl.queries.unresolved_entries(run.run_id):
        console.print(
            f"  [red]left:[/] {entry.name} {entry.status}, {entry.attempts} attempt"
            f"{'s' if entry.attempts != 1 else ''} — {entry.last_error or 'not yet tried'}"
        )


def _describe(detail: dict[str, Any]) -> str:
    parts = []
    for key, value in detail.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{key}={value}")
    return "  ".join(parts)


def main() -> None:
    app(sys.argv[1:])

"""Reading runs from the terminal: the list (a page of the API's listing), and one run's log."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from runledger.application import words
from runledger.application.cli import exits
from runledger.application.cli.answers import RunLog, print_json
from runledger.application.cli.console import LOG_LINES, cleanup_text, console, show_details
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, moment, typed, within
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.reading.answers import MAX_PAGE
from runledger.application.reading.schemas import runs as schemas
from runledger.application.words import CLEANUP_STATUS_MEANS, UNDER_WAY_MEANS
from runledger.domain.run import RunStatus
from runledger.domain.status import CleanupFilter
from runledger.projections.pages import RunFilter

MAX_LOG_LINES = 10_000
WIDE = 110
"""Columns below which runs are listed three lines a run, not as a table that folds every id."""
CLEANUP_HELP = f"{CLEANUP_STATUS_MEANS}; {UNDER_WAY_MEANS}"


def runs(
    status: Annotated[RunStatus | None, typer.Option(help="only runs in this state")] = None,
    cleanup_status: Annotated[
        CleanupFilter | None,
        typer.Option(help=f"only runs whose cleanup is this. {CLEANUP_HELP}"),
    ] = None,
    name: Annotated[str | None, typer.Option(help="only runs whose name contains this")] = None,
    limit: Annotated[int, typer.Option(help=f"how many runs, at most {MAX_PAGE:,}")] = 20,
    cursor: Annotated[
        str | None, typer.Option(help="where the page before ended (its next cursor)")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """List runs newest first, with their ids, start times and cleanup status."""
    guarded(lambda: within("--limit", limit, MAX_PAGE))
    guarded(lambda: typed("--name", name))
    where = RunFilter(status, cleanup_status, name)
    with guarded(opened) as door:
        page = guarded(lambda: door.run_page(where, limit, cursor))
    if as_json:
        print_json(page)
    elif not page.items:
        filtered = where != RunFilter() or cursor is not None
        console.print("No runs match." if filtered else "No runs yet.")
    else:
        if console.width < WIDE:
            for run in page.items:
                console.print(_lines(run))
        else:
            console.print(_listing(page.items))
        if page.next_cursor:
            console.print(_more(page.next_cursor), soft_wrap=True)  # one line, to copy


def _more(cursor: str) -> Text:
    return Text.assemble("More runs follow: run this again with ", (f"--cursor {cursor}", "bold"))


def _lines(run: schemas.RunSummary) -> Text:
    """A run in three lines: its id and start, its name, then where it stands."""
    said = Text(str(run.run_id), style="bold")
    said.append(f"  {run.started_at:%Y-%m-%d %H:%M:%S}\n  {safe_text(run.name)}")
    said.append(f"\n  {safe_text(words.word(words.RUN, run.status).said)} · cleanup ")
    said.append_text(cleanup_text(run.status, run.cleanup_status))
    detail = words.cleanup_detail(
        run.status, run.cleanup_status, run.entries, run.unresolved, run.states
    )
    said.append(f" — {detail}" if detail else "")
    return said


def _listing(items: list[schemas.RunSummary]) -> Table:
    table = Table("run", "status", "cleanup", "entries", "unresolved", title="Runs")
    # A narrow terminal folds an id or a time onto a second line; it never cuts one.
    table.add_column("started", overflow="fold")
    table.add_column("id", overflow="fold")
    for run in items:
        table.add_row(
            Text(safe_text(run.name)),
            Text(safe_text(words.word(words.RUN, run.status).said)),
            cleanup_text(run.status, run.cleanup_status),
            str(run.entries),
            str(run.unresolved),
            f"{run.started_at:%Y-%m-%d %H:%M:%S}",
            str(run.run_id),
        )
    return table


def log(
    run_id: UUID,
    limit: Annotated[int, typer.Option(help="show the last N lines")] = LOG_LINES,
    since: Annotated[str | None, typer.Option(help="only lines from this ISO time on")] = None,
    as_json: AsJson = False,
) -> None:
    """Show one run's log: its last lines, and what is left to give back."""
    guarded(lambda: within("--limit", limit, MAX_LOG_LINES))
    start = guarded(lambda: moment("--since", since))
    with guarded(opened) as door:
        detail = guarded(lambda: door.run_detail(run_id))
        lines = guarded(lambda: door.log_page(run_id, limit, start))
    if as_json:
        print_json(RunLog(run=detail, log=lines))
    else:
        show_details(console, [(detail, lines)], limit=limit)
    if detail.run.cleanup_status == "incomplete":
        raise typer.Exit(exits.CLEANUP_INCOMPLETE)

"""`runledger projections` and `runledger rebuild`: where each projection stands, and building
them again from the store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from runledger.application.bootstrap import bootstrap
from runledger.application.cli import exits
from runledger.application.cli.answers import Difference, Rebuilt, print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.options import AsJson
from runledger.application.cli.tables import Table
from runledger.application.display import json_text, safe_text
from runledger.application.errors import RunledgerError
from runledger.application.reading.schemas.fleet import Projection
from runledger.application.store.ledger_app import LedgerApp
from runledger.projections.backend import Backend
from runledger.projections.rebuild import Difference as Differing
from runledger.projections.rebuild import RebuildReport, choose
from runledger.projections.rebuild import rebuild as rebuild_views


def projections(as_json: AsJson = False) -> None:
    """Each projection with its position, its lag behind the store, and where it is stuck
    (found by applying what is pending in a transaction that is rolled back)."""
    with guarded(opened) as door:
        views, note = guarded(door.projections)
    stuck = [view for view in views if view.stuck_at is not None]
    if as_json:
        print_json(views)
        if stuck:  # the JSON says where; a sentence after it would not be JSON
            raise typer.Exit(exits.FAILED)
        return
    console.print(_positions(views))
    if note:
        console.print(Text(note))
    if stuck:
        raise RunledgerError(_stuck(stuck))  # main() says it: exit 1


def rebuild(
    names: Annotated[list[str] | None, typer.Argument(help="projections; all if none")] = None,
    verify: Annotated[bool, typer.Option(help="rebuild aside and compare, swap nothing")] = False,
    as_json: AsJson = False,
) -> None:
    """Rebuild projections from position zero, then swap them in at once."""
    with guarded(bootstrap) as rl:
        guarded(lambda: _known(names))
        report = _rebuild(rl.app, rl.backend, (names, verify), quiet=as_json)
    if as_json:
        print_json(_rebuilt(report, verify))
        if report.differences:
            raise typer.Exit(exits.FAILED)
    else:
        _say_rebuilt(report, verify)


def _positions(views: list[Projection]) -> Table:
    head = max((view.position + view.lag for view in views), default=0)
    table = Table(
        "projection", "position", "lag", "stuck at", "event", "why", title=f"store head {head}"
    )
    for view in views:
        at = "" if view.stuck_at is None else str(view.stuck_at)
        event = view.stuck_event or ""
        cells = (view.name, str(view.position), str(view.lag), at, event, view.error or "")
        table.add_row(*(Text(safe_text(cell)) for cell in cells))
    return table


def _stuck(stuck: list[Projection]) -> str:
    first = min(stuck, key=lambda view: (view.stuck_at or 0, view.name))
    more = len(stuck) - 1
    others = f" (and {more} more: see the table above)" if more else ""
    return (
        f"projection {first.name} cannot apply the event at position {first.stuck_at} "
        f"({first.stuck_event}): "
        f"{first.error}; nothing after it is projected until that event is repaired{others}"
    )


def _known(names: list[str] | None) -> None:
    try:
        choose(names)
    except KeyError as error:
        raise Usage(safe_text(error.args[0])) from None


def _rebuild(
    app: LedgerApp, backend: Backend, which: tuple[list[str] | None, bool], quiet: bool
) -> RebuildReport:
    names, verify = which
    if quiet:
        return rebuild_views(app, backend, names, verify=verify)
    head = app.recorder.max_notification_id() or 0
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("rebuilding", total=head or 1, rate="")
        started = datetime.now(UTC)

        def advanced(count: int, reached: int) -> None:
            seconds = (datetime.now(UTC) - started).total_seconds() or 1e-9
            done = bar.tasks[0].completed + count
            bar.update(task, completed=min(reached, head), rate=f"{done / seconds:,.0f} events/s")

        return rebuild_views(app, backend, names, verify=verify, progress=advanced)


def _rebuilt(report: RebuildReport, verify: bool) -> Rebuilt:
    return Rebuilt(
        views=report.views,
        verified=verify,
        events=report.events,
        seconds=report.seconds,
        events_per_second=report.events_per_second,
        position=report.position,
        differences=[Difference.model_validate(d) for d in report.differences],
    )


def _say_rebuilt(report: RebuildReport, verify: bool) -> None:
    rate = (
        f"{report.events:,} events in {report.seconds:.2f}s "
        f"({report.events_per_second:,.0f} events/s)"
    )
    if not verify:
        console.print(
            f"rebuilt {', '.join(report.views)}: {rate}; swapped in at position {report.position}"
        )
    elif not report.differences:
        console.print(
            f"verified {', '.join(report.views)}: {rate}; the live tables equal a rebuild from zero"
        )
    else:
        console.print(_differences(report.differences))
        console.print(Text(f"{len(report.differences)} rows differ", style="red"))
        raise typer.Exit(1)


def _differences(differences: list[Differing]) -> Table:
    table = Table("table", "key", "live", "rebuilt", title="Differences")
    for d in differences:
        table.add_row(
            safe_text(d.table),
            safe_text(d.key),
            safe_text(json_text(d.live)),
            safe_text(json_text(d.rebuilt)),
        )
    return table

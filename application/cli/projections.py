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
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.options import AsJson
from runledger.application.cli.tables import Table
from runledger.application.display import json_text, safe_text
from runledger.application.errors import ProjectionStuck
from runledger.application.reading.schemas.fleet import Projection
from runledger.application.store.ledger_app import LedgerApp
from runledger.projections.backend import Backend
from runledger.projections.errors import Stuck
from runledger.projections.read_model import ReadModel
from runledger.projections.rebuild import Difference as Differing
from runledger.projections.rebuild import RebuildReport, choose
from runledger.projections.rebuild import rebuild as rebuild_views


def projections(as_json: AsJson = False) -> None:
    """Each projection with its position, its lag behind the store, and where it is stuck
    (found by applying what is pending in a transaction that is rolled back)."""
    with guarded(bootstrap) as rl:
        head = rl.app.recorder.max_notification_id() or 0
        positions = rl.projector.positions()
        stuck, note = _trial(rl.projector, rl.backend, head, positions)
        if as_json:
            print_json(_answers(head, positions, stuck))
            if stuck:  # the JSON says where; a sentence after it would not be JSON
                raise typer.Exit(exits.FAILED)
            return
        console.print(_positions(head, positions, stuck))
        if note:
            console.print(Text(note))
        if stuck:
            raise ProjectionStuck(list(stuck.values()))  # main() says it: exit 1


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


def _trial(
    projector: ReadModel, backend: Backend, head: int, positions: dict[str, int]
) -> tuple[dict[str, Stuck], str | None]:
    if all(position >= head for position in positions.values()):
        return {}, None
    try:
        return {s.view: s for s in projector.trial()}, None
    except Exception as error:
        if backend.read_only(error):
            return {}, "not tried: the store is read-only, so nothing pending can be applied"
        raise


def _answers(head: int, positions: dict[str, int], stuck: dict[str, Stuck]) -> list[Projection]:
    """The API's projections answer, with where each is stuck found by the trial above."""
    return [
        Projection(
            name=name,
            position=position,
            lag=max(head - position, 0),
            stuck_at=stuck[name].position if name in stuck else None,
            error=stuck[name].reason if name in stuck else None,
        )
        for name, position in sorted(positions.items())
    ]


def _positions(head: int, positions: dict[str, int], stuck: dict[str, Stuck]) -> Table:
    table = Table(
        "projection", "position", "lag", "stuck at", "event", "why", title=f"store head {head}"
    )
    for name, position in sorted(positions.items()):
        cells = (name, str(position), str(max(head - position, 0)), *_where(stuck.get(name)))
        table.add_row(*(Text(safe_text(cell)) for cell in cells))
    return table


def _where(found: Stuck | None) -> tuple[str, str, str]:
    if found is None:
        return ("", "", "")
    event = f"{found.topic} {found.originator_id} v{found.version}"
    return (str(found.position), event, found.reason)


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

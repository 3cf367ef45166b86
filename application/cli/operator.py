"""The operator's commands on the history: replay, rebuild, projections and step."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from runledger.application.bootstrap import Runledger
from runledger.application.cli.display import json_text, safe_repr, safe_text
from runledger.application.errors import BadRequest, NotFound, ProjectionStuck
from runledger.application.services.history import Replay, StepFrame, Stepping
from runledger.domain.values import check_text
from runledger.projections.errors import Stuck
from runledger.projections.rebuild import choose, rebuild

STATE_STYLE = {
    "reverted": "green",
    "expired": "green",
    "superseded": "green",
    "failing": "red",
    "drifted": "dark_orange",
    "orphaned": "dark_orange",
    "kept": "bright_black",
    "live": "white",
    "placeholder": "cyan",
}


def moment(option: str, text: str | None) -> datetime | None:
    """An option's ISO 8601 time (UTC unless it says otherwise), or BadRequest naming it."""
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{option} {safe_repr(text)} is not an ISO 8601 time") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def within(option: str, value: int, most: int) -> int:
    """A count option between 1 and ``most``, or BadRequest naming it."""
    if not 1 <= value <= most:
        raise BadRequest(f"{option} must be between 1 and {most:,}; {value} was asked for")
    return value


def _styled(value: object, style: str) -> Text:
    return Text(safe_text(value), style=style)


def register(app: typer.Typer, console: Console, open_rl: Any, guarded: Any) -> None:
    """Add the history commands to the CLI."""

    @app.command()
    def replay(
        run_id: UUID,
        as_of: Annotated[str | None, typer.Option(help="only what had happened by then")] = None,
        entry: Annotated[str | None, typer.Option(help="one entry: kind:ref or ref")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="machine-readable")] = False,
    ) -> None:
        """The audit trail of a run's cleanup, in store order."""
        with open_rl() as rl:
            found = guarded(lambda: rl.history.replay(run_id, moment("--as-of", as_of), entry))
            if as_json:
                print(json_text(found))
                return
            _show_replay(console, run_id, found)

    @app.command()
    def projections() -> None:
        """Each projection with its position, its lag behind the store, and where it is stuck
        (found by applying what is pending in a transaction that is rolled back)."""
        with open_rl() as rl:
            head = rl.app.recorder.max_notification_id() or 0
            positions = rl.projector.positions()
            stuck, note = _trial(rl, head, positions)
            table = Table(
                "projection",
                "position",
                "lag",
                "stuck at",
                "event",
                "why",
                title=f"store head {head}",
            )
            for name, position in sorted(positions.items()):
                found = stuck.get(name)
                where = (
                    ("", "", "")
                    if found is None
                    else (
                        str(found.position),
                        f"{found.topic} {found.originator_id} v{found.version}",
                        found.reason,
                    )
                )
                table.add_row(
                    *(
                        Text(safe_text(cell))
                        for cell in (name, str(position), str(max(head - position, 0)), *where)
                    )
                )
            console.print(table)
            if note:
                console.print(Text(note))
            if stuck:
                raise ProjectionStuck(list(stuck.values()))  # main() says it: exit 2

    @app.command(name="rebuild")
    def rebuild_command(
        names: Annotated[list[str] | None, typer.Argument(help="projections; all if none")] = None,
        verify: Annotated[
            bool, typer.Option(help="rebuild aside and compare, swap nothing")
        ] = False,
    ) -> None:
        """Rebuild projections from position zero, then swap them in at once."""
        with open_rl() as rl:
            try:
                choose(names)
            except KeyError as error:
                console.print(Text.assemble(("runledger:", "red"), f" {safe_text(error.args[0])}"))
                raise typer.Exit(2) from None
            report = _rebuild(console, rl, names, verify)
            rate = (
                f"{report.events:,} events in {report.seconds:.2f}s "
                f"({report.events_per_second:,.0f} events/s)"
            )
            if not verify:
                console.print(
                    f"rebuilt {', '.join(report.views)}: {rate}; swapped in at "
                    f"position {report.position}"
                )
                return
            if not report.differences:
                console.print(
                    f"verified {', '.join(report.views)}: {rate}; "
                    "the live tables equal a rebuild from zero"
                )
                return
            table = Table("table", "key", "live", "rebuilt", title="Differences")
            for d in report.differences:
                table.add_row(
                    safe_text(d.table),
                    safe_text(d.key),
                    safe_text(json_text(d.live)),
                    safe_text(json_text(d.rebuilt)),
                )
            console.print(table)
            console.print(Text(f"{len(report.differences)} rows differ", style="red"))
            raise typer.Exit(1)

    @app.command()
    def step(
        entry: Annotated[str, typer.Argument(help="an entry id, or its ref")],
        at: Annotated[int | None, typer.Option(help="show version N, reading no further")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="machine-readable")] = False,
    ) -> None:
        """Step through one entry's events, version by version."""
        with open_rl() as rl:
            entry_id = guarded(lambda: _entry_id(rl, entry))
            stepping = guarded(lambda: rl.history.step(entry_id, at))
            frames = stepping.frames[-1:] if at is not None else stepping.frames
            if as_json:
                print(
                    json_text(
                        {
                            "entry_id": entry_id,
                            "name": stepping.name,
                            "versions": stepping.total,
                            "frames": frames,
                        }
                    )
                )
                return
            if at is None and sys.stdin.isatty() and sys.stdout.isatty():
                _interactive(console, rl, entry_id, stepping)
                return
            for frame in frames:
                _show_frame(console, stepping, frame)


def _show_replay(console: Console, run_id: UUID, found: Replay) -> None:
    title = f"{safe_text(found.name)} {run_id}" + (f" as of {found.as_of}" if found.as_of else "")
    table = Table("#", "time", "entry", "event", "actor", "outcome", title=Text(title))
    for line in found.lines:
        table.add_row(
            str(line.position),
            f"{line.at:%Y-%m-%d %H:%M:%S}",
            safe_text(line.subject),
            safe_text(line.event),
            safe_text(line.actor or ""),
            _styled(line.outcome, STATE_STYLE.get(line.outcome, "white")),
        )
    console.print(table)
    if found.as_of:
        for state in found.entries:
            console.print(
                Text.assemble(
                    f"  {safe_text(state.name)}: ",
                    _styled(state.state, STATE_STYLE.get(state.state, "white")),
                    f", {state.attempts} attempts",
                )
            )
    console.print(
        Text.assemble(
            f"run {safe_text(found.run_status)}; cleanup status ",
            _styled(found.cleanup_status, "bold"),
        )
    )


def _trial(
    rl: Runledger, head: int, positions: dict[str, int]
) -> tuple[dict[str, Stuck], str | None]:
    if all(position >= head for position in positions.values()):
        return {}, None
    try:
        return {s.view: s for s in rl.projector.trial()}, None
    except Exception as error:
        if rl.backend.read_only(error):
            return {}, "not tried: the store is read-only, so nothing pending can be applied"
        raise


def _rebuild(console: Console, rl: Runledger, names: list[str] | None, verify: bool) -> Any:
    head = rl.app.recorder.max_notification_id() or 0
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

        return rebuild(rl.app, rl.backend, names, verify=verify, progress=advanced)


def _entry_id(rl: Runledger, text: str) -> UUID:
    """An entry named by its id, or by a ref (or kind:ref) that names exactly one entry."""
    try:
        return UUID(text)
    except ValueError:
        return _entry_named(rl, text)


def _entry_named(rl: Runledger, text: str) -> UUID:
    rl.projector.catch_up()
    found = rl.queries.entries_named(check_text(text, "ENTRY"))
    if not found:
        raise NotFound(f"no ledger entry named {safe_repr(text)}")
    if len(found) > 1:
        names = ", ".join(f"{e.entry_id} (run {e.run_id})" for e in found[:5])
        raise BadRequest(f"{len(found)} entries are named {safe_repr(text)}; pass one id: {names}")
    return found[0].entry_id


def _show_frame(console: Console, stepping: Stepping, frame: StepFrame) -> None:
    console.rule(
        Text(
            f"{safe_text(stepping.name)} — version {frame.version} of {stepping.total}: "
            f"{safe_text(frame.event)} at {frame.at:%Y-%m-%d %H:%M:%S}"
        )
    )
    table = Table("field", "value", "changed from", box=None)
    for name, value in frame.state.items():
        if name in frame.changed:
            table.add_row(
                _styled(name, "bold"),
                Text(_show(value), style="yellow"),
                _show(frame.changed[name][0]),
            )
        else:
            table.add_row(safe_text(name), _show(value), "")
    console.print(table)
    last = frame.version == stepping.total
    if frame.values is not None and (frame.event == "Drifted" or last):
        values = Table("baseline", "applied", "current", title="who changed this, and when?")
        values.add_row(
            *(safe_repr(frame.values.get(k)) for k in ("baseline", "applied", "current"))
        )
        console.print(values)


def _show(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else safe_repr(value)


def _interactive(console: Console, rl: Runledger, entry_id: UUID, stepping: Stepping) -> None:
    index = 0
    while True:
        _show_frame(console, stepping, stepping.frames[index])
        answer = console.input(Text("(n)ext (p)revious (j N) jump (q)uit: ", style="dim"))
        answer = answer.strip().lower()
        if answer in ("q", "quit"):
            return
        if answer in ("", "n"):
            index = min(index + 1, len(stepping.frames) - 1)
        elif answer == "p":
            index = max(index - 1, 0)
        elif answer.startswith("j"):
            try:
                index = min(max(int(answer[1:].strip()) - 1, 0), len(stepping.frames) - 1)
            except ValueError:
                console.print("jump needs a version number: j 3")

"""`runledger step`: one ledger entry's events, version by version, on a screen or as JSON."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.text import Text

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, text_checked
from runledger.application.cli.tables import Table
from runledger.application.display import safe_repr, safe_text
from runledger.application.plain import when
from runledger.application.reading.schemas.history import EntryHistory, Frame
from runledger.application.words import event_said, field_said, field_value


def step(
    entry: Annotated[str, typer.Argument(help="an entry id, or its ref", callback=text_checked)],
    at: Annotated[int | None, typer.Option(help="show version N, reading no further")] = None,
    as_json: AsJson = False,
) -> None:
    """Step through one entry's events, version by version."""
    with guarded(opened) as door:
        # The API's entry history; with --at, only that version, as the screen shows it.
        stepping = guarded(lambda: door.step(entry, at))
    if as_json:
        print_json(stepping)
    elif at is None and sys.stdin.isatty() and sys.stdout.isatty():
        _interactive(stepping)
    else:
        for frame in stepping.frames:
            _show_frame(stepping, frame)


def _show_frame(stepping: EntryHistory, frame: Frame) -> None:
    console.rule(
        Text(
            f"{safe_text(stepping.name)} — version {frame.version} of {stepping.total}: "
            f"{event_said(frame.event)} ({safe_text(frame.event)}) at {when(frame.at)}"
        )
    )
    console.print(_fields(frame))
    last = frame.version == stepping.total
    if frame.values is not None and (frame.event == "Drifted" or last):
        # As typed: "5" and 5 differ here, and that difference is often the drift.
        values = Table("baseline", "applied", "current", title="who changed this, and when?")
        values.add_row(
            *(
                safe_repr(v)
                for v in (frame.values.baseline, frame.values.applied, frame.values.current)
            )
        )
        console.print(values)


def _fields(frame: Frame) -> Table:
    """The entry's fields in words (``--json`` keeps the stored names and values)."""
    table = Table("field", "value", "changed from", box=None)
    for name, value in frame.state.items():
        said = safe_text(field_said(name))
        if name in frame.changed:
            table.add_row(
                Text(said, style="bold"),
                Text(_show(name, value), style="yellow"),
                _show(name, frame.changed[name].before),
            )
        else:
            table.add_row(said, _show(name, value), "")
    return table


def _show(name: str, value: Any) -> str:
    return safe_text(field_value(name, value))


def _interactive(stepping: EntryHistory) -> None:
    index = 0
    while True:
        _show_frame(stepping, stepping.frames[index])
        answer = console.input(Text("(n)ext (p)revious (j N) jump (q)uit: ", style="dim"))
        answer = answer.strip().lower()
        if answer in ("q", "quit"):
            return
        index = _moved(index, answer, len(stepping.frames))


def _moved(index: int, answer: str, frames: int) -> int:
    """The frame an answer moves to: next on Enter, and a jump that is no number stays put."""
    if answer in ("", "n"):
        return min(index + 1, frames - 1)
    if answer == "p":
        return max(index - 1, 0)
    if answer.startswith("j"):
        try:
            return min(max(int(answer[1:].strip()) - 1, 0), frames - 1)
        except ValueError:
            console.print("jump needs a version number: j 3")
    return index

"""`runledger step`: one ledger entry's events, version by version, on a screen or as JSON."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Annotated, Any
from uuid import UUID

import typer
from rich.text import Text

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, text_checked
from runledger.application.cli.tables import Table
from runledger.application.display import safe_repr, safe_text
from runledger.application.errors import BadRequest, NotFound
from runledger.application.plain import when
from runledger.application.reading import shapes
from runledger.application.services.history import StepFrame, Stepping
from runledger.application.words import event_said, field_said, field_value
from runledger.domain.values import check_text
from runledger.projections.queries import Queries


def step(
    entry: Annotated[str, typer.Argument(help="an entry id, or its ref", callback=text_checked)],
    at: Annotated[int | None, typer.Option(help="show version N, reading no further")] = None,
    as_json: AsJson = False,
) -> None:
    """Step through one entry's events, version by version."""
    with guarded(bootstrap) as rl:
        entry_id = guarded(lambda: _entry_id(rl.queries, entry))
        stepping = guarded(lambda: rl.history.step(entry_id, at))
        frames = stepping.frames[-1:] if at is not None else stepping.frames
        if as_json:
            # The API's entry history; with --at, only that version, as the screen shows it.
            print_json(shapes.stepping(replace(stepping, frames=frames)))
        elif at is None and sys.stdin.isatty() and sys.stdout.isatty():
            _interactive(stepping)
        else:
            for frame in frames:
                _show_frame(stepping, frame)


def _entry_id(queries: Queries, text: str) -> UUID:
    """An entry named by its id, or by a ref (or kind:ref) that names exactly one entry."""
    try:
        return UUID(text)
    except ValueError:
        return _entry_named(queries, text)


def _entry_named(queries: Queries, text: str) -> UUID:
    found = queries.entries_named(check_text(text, "ENTRY"))
    if not found:
        raise NotFound(f"no ledger entry named {safe_repr(text)}")
    if len(found) > 1:
        names = ", ".join(f"{e.entry_id} (run {e.run_id})" for e in found[:5])
        raise BadRequest(f"{len(found)} entries are named {safe_repr(text)}; pass one id: {names}")
    return found[0].entry_id


def _show_frame(stepping: Stepping, frame: StepFrame) -> None:
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
            *(safe_repr(frame.values.get(k)) for k in ("baseline", "applied", "current"))
        )
        console.print(values)


def _fields(frame: StepFrame) -> Table:
    """The entry's fields in words (``--json`` keeps the stored names and values)."""
    table = Table("field", "value", "changed from", box=None)
    for name, value in frame.state.items():
        said = safe_text(field_said(name))
        if name in frame.changed:
            table.add_row(
                Text(said, style="bold"),
                Text(_show(name, value), style="yellow"),
                _show(name, frame.changed[name][0]),
            )
        else:
            table.add_row(said, _show(name, value), "")
    return table


def _show(name: str, value: Any) -> str:
    return safe_text(field_value(name, value))


def _interactive(stepping: Stepping) -> None:
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

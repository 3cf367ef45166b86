"""`runledger replay`: the audit trail of a run's cleanup, read from the store itself."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from runledger.application import words
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import TONE_STYLE, cleanup_text, console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, moment
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.reading.schemas.history import Replay
from runledger.domain.run import ended

STATE_STYLE = {state: TONE_STYLE[said.tone] for state, said in words.STATE.items()}
"""An entry state's colour, as the vocabulary's tone for it says."""


def replay(
    run_id: UUID,
    as_of: Annotated[str | None, typer.Option(help="only what had happened by then")] = None,
    entry: Annotated[str | None, typer.Option(help="one entry: kind:ref or ref")] = None,
    as_json: AsJson = False,
) -> None:
    """The audit trail of a run's cleanup, in store order."""
    when = guarded(lambda: moment("--as-of", as_of))
    with guarded(opened) as door:
        found = guarded(lambda: door.replay(run_id, when, entry))
    if as_json:
        print_json(found)
    else:
        _show_replay(run_id, found)


def _show_replay(run_id: UUID, found: Replay) -> None:
    console.print(_lines(run_id, found))
    if found.as_of:
        for state in found.entries:
            console.print(
                Text.assemble(
                    f"  {safe_text(state.name)}: ",
                    _styled(
                        words.state_word(state.state, not ended(found.run_status)).said,
                        STATE_STYLE.get(state.state, "white"),
                    ),
                    f", {state.attempts} attempts",
                )
            )
    console.print(
        Text.assemble(
            f"run {safe_text(words.word(words.RUN, found.run_status).said)}; cleanup ",
            cleanup_text(found.run_status, found.cleanup_status),
        )
    )


def _lines(run_id: UUID, found: Replay) -> Table:
    title = f"{safe_text(found.name)} {run_id}" + (f" as of {found.as_of}" if found.as_of else "")
    table = Table("#", "time", "entry", "event", "actor", "outcome", title=Text(title))
    for line in found.lines:
        table.add_row(
            str(line.position),
            f"{line.at:%Y-%m-%d %H:%M:%S}",
            safe_text(line.subject),
            safe_text(words.event_said(line.event)),
            safe_text(line.actor or ""),
            _styled(line.outcome, STATE_STYLE.get(line.outcome, "white")),
        )
    return table


def _styled(value: object, style: str) -> Text:
    return Text(safe_text(value), style=style)

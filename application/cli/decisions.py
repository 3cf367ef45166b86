"""`runledger keep` and `runledger retry`: a person decides about what an ended run left
unresolved. Keep one entry, or every one left, as it stands in the world with a reason; or ask
again for one entry alone. Each is in the named person's name and written to the run's log."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from runledger.application import words
from runledger.application.cli import exits
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import cleanup_text, console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson, by_option, reason_checked
from runledger.application.display import safe_text
from runledger.application.plain import counted
from runledger.application.reading.schemas.decisions import EntryRetried, Kept

Run = Annotated[UUID, typer.Argument(metavar="RUN", help="an ended run")]
By = Annotated[str | None, by_option("who decides")]


def keep(
    run_id: Run,
    why: Annotated[
        str,
        typer.Option(
            "--reason",
            help="why it is accepted as it stands (recorded with it)",
            callback=reason_checked,
        ),
    ],
    entry_id: Annotated[
        UUID | None,
        typer.Argument(
            metavar="ENTRY", help="the entry to keep; without it, every entry left unresolved"
        ),
    ] = None,
    by: By = None,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Keep an unresolved entry of an ended run as it stands in the world, or without ENTRY
    every entry the run left, with a reason, in your name.

    What is kept is no longer given back: it stays in the world, in your name."""
    with guarded(opened) as door:
        answer = guarded(lambda: door.keep((run_id, entry_id), by, why, idempotency_key))
    if as_json:
        print_json(answer)
    else:
        for line in _kept_lines(answer):
            console.print(line)
    _exit_when_incomplete(answer.cleanup_status)


def retry(
    run_id: Run,
    entry_id: Annotated[UUID, typer.Argument(metavar="ENTRY", help="the entry to ask again for")],
    by: By = None,
    why: Annotated[
        str | None,
        typer.Option("--reason", help="why (written to the log)", callback=reason_checked),
    ] = None,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Ask again for one unresolved entry of an ended run: reset its attempts and give back its
    group now, in your name.

    A lease entry whose target another live run holds is left alone, and said why."""
    with guarded(opened) as door:
        answer = guarded(lambda: door.retry((run_id, entry_id), by, why, idempotency_key))
    if as_json:
        print_json(answer)
    else:
        console.print(_retried_line(answer))
        for held in answer.held:
            console.print(
                Text.assemble("  ", ("left alone:", "yellow"), f" {safe_text(held.said)}")
            )
    _exit_when_incomplete(answer.cleanup_status)


def _kept_lines(answer: Kept) -> list[Text]:
    entries = "entry" if len(answer.kept) == 1 else "entries"
    lines = [
        Text.assemble(
            f"kept {len(answer.kept)} {entries} of {answer.run_id} in the name "
            f"{safe_text(answer.by)}: ",
            (safe_text(answer.reason), "bold"),
        )
    ]
    lines += [Text(f"  {safe_text(k.name)}  {k.entry_id}") for k in answer.kept]
    lines.append(_standing(answer.cleanup_status, answer.remaining))
    return lines


def _retried_line(answer: EntryRetried) -> Text:
    if answer.held:
        said = "left as it is (another live run holds its target)"
    else:
        state = words.state_word(answer.state, running=False).said
        said = f"{safe_text(state)} after {counted(answer.attempts, 'attempt')}"
        if answer.last_error and answer.state != "reverted":
            said += f": {safe_text(answer.last_error)}"
    return Text.assemble(
        f"retried {safe_text(answer.name)} of {answer.run_id} (by {safe_text(answer.by)}): "
        f"{said}; ",
        _standing(answer.cleanup_status, answer.remaining),
    )


def _standing(status: str, remaining: int) -> Text:
    entries = "entry" if remaining == 1 else "entries"
    return Text.assemble(
        "cleanup ", cleanup_text("ended", status), f", {remaining} {entries} unresolved"
    )


def _exit_when_incomplete(status: str) -> None:
    if status == "incomplete":
        raise typer.Exit(exits.CLEANUP_INCOMPLETE)

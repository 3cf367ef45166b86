"""`runledger def schedule | occurrences | cancel`: a definition's occurrences, the runs a runner
starts by itself at their time, pinned to the version published then. cli/app.py adds them to
`def` after the definition commands."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.definitions import By, Name, stamped
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson, moment
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.domain.occurrence import OccurrenceState


def schedule(
    name: Name,
    at: Annotated[str, typer.Option("--at", help="when, ISO 8601 (UTC unless it says)")],
    by: By = None,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Schedule the definition at a time, pinned to its latest version."""
    when = guarded(lambda: moment("--at", at))
    if when is None:
        raise Usage("--at is needed")
    with guarded(opened) as door:
        found = guarded(lambda: door.schedule(name, when, by, idempotency_key))
    if as_json:
        print_json(found)
    else:
        console.print(
            f"occurrence {found.occurrence_id}: {safe_text(name)} version {found.version} at "
            f"{found.due_at:%Y-%m-%d %H:%M:%S} UTC, {stamped(found.verified)}"
        )


def occurrences(
    name: Annotated[str | None, typer.Argument(help="one definition's; all when left out")] = None,
    state: Annotated[
        OccurrenceState | None, typer.Option(help="scheduled, started or cancelled")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Occurrences in due order, with their pinned version and verified stamp."""
    with guarded(opened) as door:
        found = guarded(lambda: door.occurrences(name, state))
    if as_json:
        print_json(found)
        return
    if not found:
        console.print("No occurrences.")
        return
    table = Table("definition", "version", "verified by", "state", title="Occurrences")
    table.add_column("due (UTC)", no_wrap=True)
    # Ids are what `def cancel` and `log` take: a narrow terminal folds one, never cuts it.
    table.add_column("run", overflow="fold")
    table.add_column("id", overflow="fold")
    for o in found:
        table.add_row(
            Text(safe_text(o.definition)),
            str(o.version),
            Text(safe_text(o.verified.by, 80)) if o.verified else "unverified",
            o.state,
            f"{o.due_at:%Y-%m-%d %H:%M}",
            str(o.run_id or ""),
            str(o.occurrence_id),
        )
    console.print(table)


def cancel(
    occurrence_id: Annotated[UUID, typer.Argument(help="the occurrence's id")],
    by: By = None,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Cancel an occurrence that has not started yet."""
    with guarded(opened) as door:
        found = guarded(lambda: door.cancel_occurrence(occurrence_id, by, idempotency_key))
    if as_json:
        print_json(found)
    else:
        console.print(
            f"cancelled occurrence {occurrence_id} by {safe_text(found.cancelled_by or by or '')}"
        )

"""`runledger def schedule | occurrences | cancel`: a definition's occurrences, the runs a runner
starts by itself at their time, pinned to the version published then. cli/app.py adds them to
`def` after the definition commands."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.definitions import DEFINITIONS, By, Name, stamped
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.keyed import IdempotencyKey, once
from runledger.application.cli.options import AsJson, moment
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.reading import definitions as answer
from runledger.application.reading.schemas import definitions as schema
from runledger.application.services.occurrences import Occurrences
from runledger.domain.occurrence import OccurrenceState


def schedule(
    name: Name,
    at: Annotated[str, typer.Option("--at", help="when, ISO 8601 (UTC unless it says)")],
    by: By,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Schedule the definition at a time, pinned to its latest version."""
    when = guarded(lambda: moment("--at", at))
    if when is None:
        raise Usage("--at is needed")
    with guarded(bootstrap) as rl:
        found = once(
            rl.once,
            (idempotency_key, by, f"{DEFINITIONS}/{name}/occurrences", {"at": when.isoformat()}),
            lambda: answer.occurrence(
                rl.occurrences.row(rl.occurrences.schedule(name, when, by).id)
            ),
            schema.Occurrence,
            201,
        )
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
    with guarded(bootstrap) as rl:
        found = [answer.occurrence(r) for r in guarded(lambda: rl.occurrences.listing(name, state))]
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
    by: By,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Cancel an occurrence that has not started yet."""
    with guarded(bootstrap) as rl:
        found = once(
            rl.once,
            (idempotency_key, by, f"/admin/occurrences/{occurrence_id}/cancel", None),
            lambda: _cancelled(rl.occurrences, occurrence_id, by),
            schema.Occurrence,
        )
    if as_json:
        print_json(found)
    else:
        console.print(f"cancelled occurrence {occurrence_id} by {safe_text(by)}")


def _cancelled(occurrences: Occurrences, occurrence_id: UUID, by: str) -> schema.Occurrence:
    occurrences.cancel(occurrence_id, by)
    return answer.occurrence(occurrences.row(occurrence_id))

"""Acting on a run from the terminal: start it, advance, cancel or abort it. With --json each
prints what the API's route answers."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson, by_option, file_text, reason_checked
from runledger.application.display import safe_text

By = Annotated[str | None, by_option("who asks")]


def start(
    spec: Annotated[typer.FileText, typer.Argument(help="a JSON spec file, or - for stdin")],
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Start a run from a spec, checked as a definition's dry run checks it; print its id."""
    with guarded(opened) as door:
        text = guarded(lambda: file_text(spec))
        detail = guarded(lambda: door.start(text, idempotency_key))
    if as_json:
        print_json(detail)
    else:
        console.print(str(detail.run.run_id))


def advance(
    run_id: UUID, by: By = None, idempotency_key: IdempotencyKey = None, as_json: AsJson = False
) -> None:
    """Advance a run's current phase once its steps are done."""
    with guarded(opened) as door:
        found = guarded(lambda: door.advance(run_id, by, idempotency_key))
    if as_json:
        print_json(found)
    else:
        console.print(safe_text(found.message))


def cancel(
    run_id: UUID,
    by: By = None,
    cleanup: Annotated[bool, typer.Option(help="give everything back (default)")] = True,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Cancel a run, with cleanup or keeping everything in the world in your name."""
    with guarded(opened) as door:
        detail = guarded(lambda: door.cancel(run_id, by, cleanup, idempotency_key))
    if as_json:
        print_json(detail)
        return
    kept = sum(g.count for g in detail.entries if g.state == "kept")
    entries = "entry" if kept == 1 else "entries"
    who = safe_text(detail.run.ended_by or by or "")
    console.print("cancelled" + ("" if cleanup else f"; {kept} {entries} kept by {who}"))


def abort(
    run_id: UUID,
    reason: Annotated[str, typer.Option(help="why", callback=reason_checked)],
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Abort a run; the cleanup leg gives everything back."""
    with guarded(opened) as door:
        detail = guarded(lambda: door.abort(run_id, reason, idempotency_key))
    if as_json:
        print_json(detail)
    else:
        console.print("aborted")

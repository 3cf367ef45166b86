"""Acting on a run from the terminal: start it, advance, cancel or abort it. With --json each
prints what the API's route answers."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from runledger.application.api import reading
from runledger.application.api.schemas.runs import Advanced
from runledger.application.bootstrap import bootstrap
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.display import safe_text
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, file_text, person_checked, reason_checked


def start(
    spec: Annotated[typer.FileText, typer.Argument(help="a JSON spec file, or - for stdin")],
    as_json: AsJson = False,
) -> None:
    """Start a run from a spec; print its id."""
    with guarded(bootstrap) as rl:
        run_id = guarded(lambda: rl.runs.start(file_text(spec)))
        if as_json:
            print_json(guarded(lambda: reading.run_detail(rl, run_id)))
        else:
            console.print(str(run_id))


def advance(
    run_id: UUID,
    by: Annotated[str, typer.Option(help="who asks", callback=person_checked)],
    as_json: AsJson = False,
) -> None:
    """Advance a run's current phase once its steps are done."""
    with guarded(bootstrap) as rl:
        said = guarded(lambda: rl.runs.advance(run_id, by))
    if as_json:
        print_json(Advanced(run_id=run_id, message=said))
    else:
        console.print(safe_text(said))


def cancel(
    run_id: UUID,
    by: Annotated[str, typer.Option(help="who asks", callback=person_checked)],
    cleanup: Annotated[bool, typer.Option(help="give everything back (default)")] = True,
    as_json: AsJson = False,
) -> None:
    """Cancel a run, with cleanup or keeping everything in the world in your name."""
    with guarded(bootstrap) as rl:
        kept = guarded(lambda: rl.ledger.cancel_run(run_id, by, cleanup=cleanup))
        if as_json:
            print_json(guarded(lambda: reading.run_detail(rl, run_id)))
            return
    entries = "entry" if kept == 1 else "entries"
    console.print("cancelled" + ("" if cleanup else f"; {kept} {entries} kept by {safe_text(by)}"))


def abort(
    run_id: UUID,
    reason: Annotated[str, typer.Option(help="why", callback=reason_checked)],
    as_json: AsJson = False,
) -> None:
    """Abort a run; the cleanup leg gives everything back."""
    with guarded(bootstrap) as rl:
        guarded(lambda: rl.ledger.abort_run(run_id, reason))
        if as_json:
            print_json(guarded(lambda: reading.run_detail(rl, run_id)))
            return
    console.print("aborted")

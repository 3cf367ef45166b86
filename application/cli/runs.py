"""A run's life from the terminal: start it, list and read it, advance, cancel, abort it, and
ask for its cleanup again."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import typer

from runledger.application.bootstrap import Runledger, bootstrap
from runledger.application.cli.console import LOG_LINES, console, show_runs
from runledger.application.cli.display import safe_text
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import moment, within
from runledger.application.errors import NotFound
from runledger.projections.pages import RunFilter

MAX_RUNS = 1_000
MAX_LOG_LINES = 10_000


def runs(
    limit: Annotated[int, typer.Option(help=f"how many runs, at most {MAX_RUNS:,}")] = 20,
) -> None:
    """List recent runs with their cleanup status."""
    guarded(lambda: within("--limit", limit, MAX_RUNS))
    with guarded(bootstrap) as rl:
        ids = _recent_runs(rl, limit)
        if not ids:
            console.print("No runs yet.")
            return
        show_runs(console, rl, ids, with_log=False)


def log(
    run_id: UUID,
    limit: Annotated[int, typer.Option(help="show the last N lines")] = LOG_LINES,
    since: Annotated[str | None, typer.Option(help="only lines from this ISO time on")] = None,
) -> None:
    """Show one run's log: its last lines, and what is left to give back."""
    guarded(lambda: within("--limit", limit, MAX_LOG_LINES))
    start = guarded(lambda: moment("--since", since))
    with guarded(bootstrap) as rl:
        guarded(lambda: _known_run(rl, run_id))
        show_runs(console, rl, [run_id], with_log=True, limit=limit, since=start)


def start(
    spec: Annotated[typer.FileText, typer.Argument(help="a JSON spec file, or - for stdin")],
) -> None:
    """Start a run from a spec."""
    with guarded(bootstrap) as rl:
        run_id = guarded(lambda: rl.runs.start(spec.read()))
        console.print(str(run_id))


def advance(run_id: UUID, by: Annotated[str, typer.Option(help="who asks")]) -> None:
    """Advance a run's current phase once its steps are done."""
    with guarded(bootstrap) as rl:
        console.print(safe_text(guarded(lambda: rl.runs.advance(run_id, by))))


def cancel(
    run_id: UUID,
    by: Annotated[str, typer.Option(help="who asks")],
    cleanup: Annotated[bool, typer.Option(help="give everything back (default)")] = True,
) -> None:
    """Cancel a run, with cleanup or keeping everything in the world in your name."""
    with guarded(bootstrap) as rl:
        kept = guarded(lambda: rl.ledger.cancel_run(run_id, by, cleanup=cleanup))
        console.print(
            "cancelled" + ("" if cleanup else f"; {kept} entries kept by {safe_text(by)}")
        )


def abort(run_id: UUID, reason: Annotated[str, typer.Option(help="why")]) -> None:
    """Abort a run; the cleanup leg gives everything back."""
    with guarded(bootstrap) as rl:
        guarded(lambda: rl.ledger.abort_run(run_id, reason))
        console.print("aborted")


def cleanup(run_id: UUID, by: Annotated[str, typer.Option(help="who asks")]) -> None:
    """Ask again: reset the run's attempt counters and work it now."""
    with guarded(bootstrap) as rl:
        summary = guarded(lambda: rl.cleanup.manual_cleanup(run_id, by))
        console.print(safe_text(summary))


def _known_run(rl: Runledger, run_id: UUID) -> None:
    if rl.queries.run(run_id, rl.clock(), rl.settings.max_revert_attempts) is None:
        raise NotFound(f"no run {run_id}")


def _recent_runs(rl: Runledger, limit: int) -> list[UUID]:
    """The last ``limit`` runs started, oldest of them first (as the table lists them)."""
    now, attempts = rl.clock(), rl.settings.max_revert_attempts
    return [run_id for run_id, _ in rl.pages.runs(RunFilter(), limit, None, now, attempts)][::-1]

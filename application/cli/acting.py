"""Acting on a run from the terminal: start it, advance, cancel or abort it. With --json each
prints what the API's route answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from uuid import UUID

import typer

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.errors import guarded
from runledger.application.cli.keyed import (
    IdempotencyKey,
    answered,
    keyed_call,
    spec_body,
    terminal_person,
)
from runledger.application.cli.options import AsJson, file_text, person_checked, reason_checked
from runledger.application.display import safe_text
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import Advanced, RunDetail


def start(
    spec: Annotated[typer.FileText, typer.Argument(help="a JSON spec file, or - for stdin")],
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Start a run from a spec, checked as a definition's dry run checks it; print its id."""
    with guarded(bootstrap) as rl:
        text = file_text(spec)
        call = guarded(
            lambda: keyed_call(
                rl.once, idempotency_key, terminal_person(), "/admin/events/runs", spec_body(text)
            )
        )
        if call is None:
            run_id = guarded(lambda: rl.runs.start(text))
            detail = guarded(lambda: rl.answers.run_detail(run_id)) if as_json else None
        else:
            detail = guarded(
                lambda: answered(
                    call,
                    lambda: rl.answers.run_detail(rl.runs.start(text, run_id=call.run_id)),
                    RunDetail,
                    201,
                )
            )
            run_id = detail.run.run_id
    if detail is not None and as_json:
        print_json(detail)
    else:
        console.print(str(run_id))


def advance(
    run_id: UUID,
    by: Annotated[str, typer.Option(help="who asks", callback=person_checked)],
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Advance a run's current phase once its steps are done."""
    with guarded(bootstrap) as rl:
        call = guarded(
            lambda: keyed_call(
                rl.once, idempotency_key, by, f"/admin/events/runs/{run_id}/advance", None
            )
        )
        found = guarded(
            lambda: answered(
                call,
                lambda: Advanced(run_id=run_id, message=rl.runs.advance(run_id, by)),
                Advanced,
            )
        )
    if as_json:
        print_json(found)
    else:
        console.print(safe_text(found.message))


def cancel(
    run_id: UUID,
    by: Annotated[str, typer.Option(help="who asks", callback=person_checked)],
    cleanup: Annotated[bool, typer.Option(help="give everything back (default)")] = True,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Cancel a run, with cleanup or keeping everything in the world in your name."""
    with guarded(bootstrap) as rl:
        if idempotency_key is None:
            kept = guarded(lambda: rl.ledger.cancel_run(run_id, by, cleanup=cleanup))
            detail = guarded(lambda: rl.answers.run_detail(run_id)) if as_json else None
        else:
            path = f"/admin/events/runs/{run_id}/cancel"
            call = guarded(
                lambda: keyed_call(rl.once, idempotency_key, by, path, {"cleanup": cleanup})
            )
            detail = guarded(
                lambda: answered(
                    call,
                    _then_detail(
                        rl.answers,
                        run_id,
                        lambda: rl.ledger.cancel_run(run_id, by, cleanup=cleanup),
                    ),
                    RunDetail,
                )
            )
            kept = sum(g.count for g in detail.entries if g.state == "kept")
        if detail is not None and as_json:
            print_json(detail)
            return
    entries = "entry" if kept == 1 else "entries"
    console.print("cancelled" + ("" if cleanup else f"; {kept} {entries} kept by {safe_text(by)}"))


def abort(
    run_id: UUID,
    reason: Annotated[str, typer.Option(help="why", callback=reason_checked)],
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Abort a run; the cleanup leg gives everything back."""
    with guarded(bootstrap) as rl:
        path = f"/admin/events/runs/{run_id}/abort"
        call = guarded(
            lambda: keyed_call(
                rl.once, idempotency_key, terminal_person(), path, {"reason": reason}
            )
        )
        if call is None:
            guarded(lambda: rl.ledger.abort_run(run_id, reason))
            detail = guarded(lambda: rl.answers.run_detail(run_id)) if as_json else None
        else:
            detail = guarded(
                lambda: answered(
                    call,
                    _then_detail(rl.answers, run_id, lambda: rl.ledger.abort_run(run_id, reason)),
                    RunDetail,
                )
            )
    if detail is not None and as_json:
        print_json(detail)
    else:
        console.print("aborted")


def _then_detail(
    answers: Answers, run_id: UUID, act: Callable[[], object]
) -> Callable[[], RunDetail]:
    """``act``, answered as the API's route answers it: the run as the act left it."""

    def acted() -> RunDetail:
        act()
        return answers.run_detail(run_id)

    return acted

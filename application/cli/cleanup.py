"""`runledger cleanup`: ask again for one run's cleanup, or, after an outage, for every ended run
a filter selects: first a plan (writing nothing), then applying exactly that plan."""

from __future__ import annotations

import shlex
from typing import Annotated
from uuid import UUID

import typer
from rich.text import Text

from runledger.application.cli import exits, where
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import cleanup_text, cleanup_words, console
from runledger.application.cli.doors import opened, remote
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson, by_option
from runledger.application.display import safe_text
from runledger.application.reading.schemas.bulk import Plan, Selector
from runledger.application.reading.schemas.runs import CleanupSummary

Where = Annotated[
    list[str] | None,
    typer.Option("--where", metavar="KEY=VALUE", help=where.HELP, autocompletion=where.complete),
]


def cleanup(
    run_id: Annotated[
        UUID | None,
        typer.Argument(metavar="RUN", help="the run to ask again for (or select runs by --where)"),
    ] = None,
    by: Annotated[str | None, by_option("who asks (needed to act)")] = None,
    where_: Where = None,
    plan: Annotated[
        bool,
        typer.Option("--plan", help="show the runs and entries --where selects; write nothing"),
    ] = False,
    apply: Annotated[
        str | None,
        typer.Option("--apply", metavar="FINGERPRINT", help="retry exactly the runs of this plan"),
    ] = None,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Ask again: reset attempt counters and work one run now, or every run a filter selects.

    One run: cleanup RUN --by NAME (no --by through a server: the token names who asks).
    After an outage: cleanup --where ... --plan shows what a filter selects, writing nothing;
    then cleanup --where ... --apply FINGERPRINT --by NAME retries exactly those runs
    (refused, exit 1, when the selection has changed since the plan)."""
    given = where_ or []
    if run_id is not None:
        guarded(lambda: _one_run_only(given, plan, apply))
        _one(run_id, by, idempotency_key, as_json)
        return
    guarded(lambda: _bulk_only(plan, apply, idempotency_key))
    selector = guarded(lambda: where.selector(given))
    if apply is None:
        _plan(selector, given, as_json)
    else:
        _apply(selector, apply, (idempotency_key, by), as_json)


def _one_run_only(given: list[str], plan: bool, apply: str | None) -> None:
    if given or plan or apply is not None:
        raise Usage("cleanup RUN takes no --where, --plan or --apply: those select runs in bulk")


def _bulk_only(plan: bool, apply: str | None, key: str | None) -> None:
    if plan and key is not None:
        raise Usage("--plan writes nothing and takes no --idempotency-key; --apply does")
    if plan == (apply is not None):
        raise Usage("name a RUN, or select runs with --where and say --plan or --apply FINGERPRINT")
    if apply is not None and not 1 <= len(apply) <= 64:
        raise Usage("--apply needs the plan's fingerprint, as --plan printed it")


def _one(run_id: UUID, by: str | None, key: str | None, as_json: bool) -> None:
    with guarded(opened) as door:
        answer = guarded(lambda: door.cleanup_one(run_id, by, key))
    if as_json:
        print_json(answer)
    else:
        console.print(Text.assemble(f"cleanup of {run_id}: ", *cleanup_words(answer)))
        for line in _held_lines(answer):
            console.print(line)
    _exit_when_incomplete([answer])


def _plan(selector: Selector, given: list[str], as_json: bool) -> None:
    with guarded(opened) as door:
        found = guarded(lambda: door.plan(selector))
    if as_json:
        print_json(found)
        return
    for line in _plan_lines(found):
        console.print(line)
    by = "" if remote() else " --by NAME"
    again = ["runledger cleanup", *(f"--where {shlex.quote(safe_text(w))}" for w in given)]
    console.print(
        Text.assemble(
            "\nTo retry exactly these: ",
            (" ".join([*again, f"--apply {found.fingerprint}{by}"]), "bold"),
        ),
        soft_wrap=True,  # one line, to copy
    )


def _plan_lines(found: Plan) -> list[Text]:
    runs = "run" if len(found.runs) == 1 else "runs"
    entries = "entry" if found.entries == 1 else "entries"
    held = sum(1 for run in found.runs for entry in run.entries if entry.held is not None)
    left = f" ({held} not restored: another live run holds the target)" if held else ""
    lines = [
        Text.assemble(
            ("Plan ", "bold"),
            (found.fingerprint, "bold"),
            f": {len(found.runs)} {runs}, {found.entries} {entries} to retry{left}; "
            "nothing written",
        )
    ]
    for run in found.runs:
        lines.append(
            Text.assemble(
                "\n",
                (safe_text(run.name), "bold"),
                f" {run.run_id} — {safe_text(run.status)}, cleanup ",
                cleanup_text(run.status, run.cleanup_status),
            )
        )
        for entry in run.entries:
            attempts = "attempt" if entry.attempts == 1 else "attempts"
            error = f", last error: {safe_text(entry.last_error)}" if entry.last_error else ""
            lines.append(
                Text(
                    f"  {safe_text(entry.name)} {safe_text(entry.state)}, {entry.attempts} "
                    f"{attempts}{error}\n    would ask: {safe_text(entry.ask)}"
                )
            )
    return lines


def _apply(
    selector: Selector, fingerprint: str, asker: tuple[str | None, str | None], as_json: bool
) -> None:
    key, by = asker
    with guarded(opened) as door:
        answer = guarded(lambda: door.apply(selector, fingerprint, by, key))
        names = guarded(lambda: door.run_names([s.run_id for s in answer.runs]))
    if as_json:
        print_json(answer)
    else:
        runs = "run" if len(answer.runs) == 1 else "runs"
        console.print(f"Applied plan {fingerprint}: {len(answer.runs)} {runs} asked again")
        for summary in answer.runs:
            name = safe_text(names.get(summary.run_id, ""))
            console.print(Text.assemble(f"  {name} {summary.run_id}: ", *cleanup_words(summary)))
            for line in _held_lines(summary, "    "):
                console.print(line)
    _exit_when_incomplete(answer.runs)


def _held_lines(summary: CleanupSummary, indent: str = "  ") -> list[Text]:
    """The lease entries the retry left as they are, each with why."""
    return [
        Text.assemble(
            indent, ("left alone:", "yellow"), f" {safe_text(h.name)}: {safe_text(h.said)}"
        )
        for h in summary.held
    ]


def _exit_when_incomplete(summaries: list[CleanupSummary]) -> None:
    if any(s.cleanup_status == "incomplete" for s in summaries):
        raise typer.Exit(exits.CLEANUP_INCOMPLETE)

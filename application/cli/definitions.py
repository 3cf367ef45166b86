"""`runledger def`: definitions (W5) from the terminal. Writes are made in the name --by gives
(through a server, the token's), as `cancel --by` does; --json prints what the API's route
answers."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from runledger.application.cli import exits
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.keyed import IdempotencyKey
from runledger.application.cli.options import AsJson, by_option, definition_checked, file_text
from runledger.application.cli.tables import Table
from runledger.application.display import json_text, safe_text
from runledger.application.reading.schemas import definitions as schema

app = typer.Typer(
    help="Definitions: a draft verified by a dry run, published as frozen versions, "
    "scheduled as occurrences that runners start by themselves."
)

By = Annotated[str | None, by_option("who does it (recorded with it)")]
SpecFile = Annotated[
    typer.FileText, typer.Option("--file", "-f", help="a JSON spec file, or - for stdin")
]
Name = Annotated[str, typer.Argument(help="the definition's name", callback=definition_checked)]
STATES = "scheduled, started or cancelled"


@app.command("create")
def create(
    name: Name,
    spec: SpecFile,
    by: By = None,
    idempotency_key: IdempotencyKey = None,
    as_json: AsJson = False,
) -> None:
    """Create a definition whose draft is the spec in the file."""
    text = guarded(lambda: file_text(spec))
    with guarded(opened) as door:
        created = guarded(lambda: door.create_definition(name, text, by, idempotency_key))
    if as_json:
        print_json(created)
        return
    console.print(f"created {safe_text(created.name)}: draft {created.fingerprint[:12]}")


@app.command("edit")
def edit(name: Name, spec: SpecFile, by: By = None, as_json: AsJson = False) -> None:
    """Replace a definition's draft with the spec in the file."""
    text = guarded(lambda: file_text(spec))
    with guarded(opened) as door:
        saved = guarded(lambda: door.edit_draft(name, text, by))
    if as_json:
        print_json(saved)
    elif saved.changed:
        console.print(
            f"edited {safe_text(name)}: draft {saved.fingerprint[:12]} (revision "
            f"{saved.revision}), unverified until a dry run passes on it"
        )
    else:
        console.print(f"{safe_text(name)}: the draft is this spec already; nothing recorded")


@app.command("verify")
def verify(
    name: Name, by: By = None, idempotency_key: IdempotencyKey = None, as_json: AsJson = False
) -> None:
    """Dry-run the draft against the loaded modules, calling nothing that changes a world, and
    record it in your name. Exits 1 when it found problems (each names its field)."""
    with guarded(opened) as door:
        found = guarded(lambda: door.verify(name, by, idempotency_key))
    if as_json:
        print_json(found)
    elif found.passed:
        console.print(
            f"{safe_text(name)}: dry run {found.dry_run} passed; draft {found.fingerprint[:12]} "
            f"verified by {safe_text(found.reviewer)} at {found.at:%Y-%m-%d %H:%M:%S} UTC"
        )
    else:
        console.print(
            f"{safe_text(name)}: dry run {found.dry_run} found "
            f"{len(found.problems)} problem(s); the draft is not verified"
        )
        for problem in found.problems:
            console.print(Text(f"  {safe_text(problem)}", style="red"))
    if not found.passed:
        raise typer.Exit(exits.FAILED)


@app.command("publish")
def publish(
    name: Name, by: By = None, idempotency_key: IdempotencyKey = None, as_json: AsJson = False
) -> None:
    """Freeze the draft as the next version and re-pin the scheduled occurrences to it."""
    with guarded(opened) as door:
        found = guarded(lambda: door.publish(name, by, idempotency_key))
    if as_json:
        print_json(found)
    else:
        console.print(safe_text(found.message))


@app.command("list")
def listing(as_json: AsJson = False) -> None:
    """Every definition: its draft, last dry run and latest version."""
    with guarded(opened) as door:
        found = guarded(door.definitions)
    if as_json:
        print_json(found)
        return
    if not found:
        console.print("No definitions yet.")
        return
    table = Table("name", "draft", "last dry run", "versions", "latest", title="Definitions")
    for d in found:
        table.add_row(
            Text(safe_text(d.name)),
            f"{d.fingerprint[:12]} r{d.revision}" + (" verified" if d.draft_verified else ""),
            {None: "none", True: "passed", False: "problems"}[d.last_dry_run_passed],
            str(d.versions),
            stamped(d.latest_verified) if d.versions else "",
        )
    console.print(table)


@app.command("show")
def show(
    name: Name,
    version: Annotated[int | None, typer.Option(help="a published version's frozen spec")] = None,
    as_json: AsJson = False,
) -> None:
    """A definition: its draft and dry runs, or one version with its frozen spec."""
    with guarded(opened) as door:
        if version is not None:
            frozen = guarded(lambda: door.version(name, version))
            if as_json:
                print_json(frozen)
            else:
                console.print(
                    f"{safe_text(name)} version {frozen.version}: {stamped(frozen.verified)}"
                )
                console.print(safe_text(json_text(frozen.spec), 100_000))
            return
        found = guarded(lambda: door.definition(name))
    if as_json:
        print_json(found)
        return
    console.print(
        f"{safe_text(found.name)}: draft {found.fingerprint[:12]} (revision {found.revision}), "
        f"publishing it now: {stamped(found.draft_verified)}"
    )
    for dry in found.dry_runs:
        outcome = "passed" if dry.passed else f"{len(dry.problems)} problem(s)"
        console.print(
            f"  dry run {dry.number} of revision {dry.revision} by {safe_text(dry.by)} at "
            f"{dry.at:%Y-%m-%d %H:%M:%S}: {outcome}"
        )
    _versions(found.versions)


@app.command("versions")
def versions(name: Name, as_json: AsJson = False) -> None:
    """A definition's published versions, each verified or not."""
    with guarded(opened) as door:
        found = guarded(lambda: door.versions(name))
    if as_json:
        print_json(found)
    elif not found:
        console.print(f"{safe_text(name)} has no published version yet.")
    else:
        _versions(found)


def stamped(stamp: schema.Stamp | None) -> str:
    if stamp is None:
        return "unverified"
    return f"verified by {safe_text(stamp.by, 80)} at {stamp.at:%Y-%m-%d %H:%M:%S} UTC"


def _versions(found: list[schema.VersionSummary]) -> None:
    for v in found:
        console.print(
            f"  version {v.version} ({v.fingerprint[:12]}) published by "
            f"{safe_text(v.published_by)} at {v.published_at:%Y-%m-%d %H:%M:%S}: "
            f"{stamped(v.verified)}"
        )

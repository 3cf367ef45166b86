"""`runledger modules`: every module folder and what loading it came to; `runledger reconcile`:
asking one what is still there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.doors import opened
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, by_option, text_checked
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.reading.schemas import fleet


def modules(as_json: AsJson = False) -> None:
    """List every module with its site, status, reason, actions and leases."""
    with guarded(opened) as door:
        found = guarded(door.modules)
    if as_json:
        print_json(found)
        return
    table = Table("module", "site", title="Modules")
    table.add_column("status", no_wrap=True)
    for header in ("actions", "leases", "reason"):
        table.add_column(header)
    for module in found:
        table.add_row(*_row(module))
    console.print(table)


def _row(m: fleet.Module) -> tuple[str | Text, ...]:
    style = "green" if m.status == "loaded" else "red"
    return (
        safe_text(m.name or f"({Path(m.folder).name})"),
        safe_text(m.site or ""),
        Text(safe_text(m.status), style=style),
        _listed(m.actions),
        _listed(m.leases),
        safe_text(m.reason or ""),
    )


def _listed(values: list[str]) -> str:
    return safe_text(", ".join(safe_text(v) for v in values))


def reconcile(
    module: Annotated[
        str, typer.Argument(help="a module this runledger loads", callback=text_checked)
    ],
    by: Annotated[str | None, by_option("who asks (named on what it settles)")] = None,
    as_json: AsJson = False,
) -> None:
    """Ask a module which of its live entries are still in force, as it does itself after a
    reconnect: what it no longer holds is orphaned (expired, if past its until) in your name."""
    with guarded(opened) as door:
        answer = guarded(lambda: door.reconcile(module, by))
    if as_json:
        print_json(answer)
        return
    console.print(
        f"{safe_text(module)}: asked about {answer.asked}, {answer.in_force} in force, "
        f"{answer.orphaned} orphaned, {answer.expired} expired, "
        f"{answer.unanswered} it could not answer for"
    )

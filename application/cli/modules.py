"""`runledger modules`: every module folder and what loading it came to."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text

from runledger.application.api import reading
from runledger.application.bootstrap import bootstrap
from runledger.application.cli.answers import print_json
from runledger.application.cli.console import console
from runledger.application.cli.display import safe_text
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson
from runledger.application.modules.loader import ModuleStatus


def modules(as_json: AsJson = False) -> None:
    """List every module with its site, status, reason, actions and leases."""
    with guarded(bootstrap) as rl:
        if as_json:
            print_json(reading.modules(rl))
            return
        table = Table("module", "site", "status", "actions", "leases", "reason", title="Modules")
        for module in rl.modules:
            table.add_row(*_row(module))
        console.print(table)


def _row(m: ModuleStatus) -> tuple[str | Text, ...]:
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

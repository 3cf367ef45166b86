"""`runledger init`: the store's tables."""

from __future__ import annotations

from rich.text import Text

from runledger.application.bootstrap import init_store
from runledger.application.cli.answers import Ready, print_json
from runledger.application.cli.console import console
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson


def init(as_json: AsJson = False) -> None:
    """Create the store's tables (safe to run again, and from many processes at once)."""
    where = guarded(init_store)
    if as_json:
        print_json(Ready(store=where))
    else:
        console.print(Text(f"Ready: {where}"))

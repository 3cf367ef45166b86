"""`runledger init`: the store's tables."""

from __future__ import annotations

from rich.text import Text

from runledger.application.bootstrap import init_store
from runledger.application.cli.console import console
from runledger.application.cli.errors import guarded


def init() -> None:
    """Create the store's tables (safe to run again, and from many processes at once)."""
    where = guarded(init_store)
    console.print(Text(f"Ready: {where}"))

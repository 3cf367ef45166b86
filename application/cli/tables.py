"""The CLI's tables: a cell is never cut short. At 80 columns a long id, reason or state wraps
onto the next lines instead of ending in "…", because what a person reads there is what they act
on (a token id `token revoke` needs whole, a module's reason, a run's state)."""

from __future__ import annotations

from typing import Any

from rich import table


class Table(table.Table):
    """rich's Table whose columns fold a word too long for them, never cut it. A column of
    states is made ``no_wrap``: its words are short, and kept whole while others fold."""

    def add_column(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        kwargs.setdefault("no_wrap", False)
        super().add_column(*args, **kwargs)

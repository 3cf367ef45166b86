"""The projections as the rest of runledger uses them, whatever keeps them level."""

from __future__ import annotations

from typing import Protocol

from runledger.projections.errors import Stuck


class ReadModel(Protocol):
    """The views, their positions in the store, and how to bring them level with it."""

    def catch_up(self) -> int:
        """Apply everything the store holds now; answers the lowest position reached."""

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        """Return once every view has reached ``position`` (a write just made); raise if not
        within ``timeout`` seconds."""

    def head(self) -> int:
        """The store's last position."""

    def behind(self) -> int:
        """How many positions the furthest-behind view has still to read."""

    def positions(self) -> dict[str, int]:
        """Each view's position: the last event it has applied."""

    def trial(self) -> list[Stuck]:
        """Where each view would stop, found without writing anything."""

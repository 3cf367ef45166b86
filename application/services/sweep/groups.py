from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from uuid import UUID

from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND, Resource
from runledger.projections.rows import EntryRow


@dataclass
class Group:
    """Entries one call gives back: a lease alone, or everything one step made."""

    rows: list[EntryRow]
    claimed: dict[UUID, Resource] = field(default_factory=dict)

    @property
    def head(self) -> EntryRow:
        return self.rows[0]

    @property
    def is_lease(self) -> bool:
        return self.head.kind == LEASE_KIND

    @property
    def what(self) -> str:
        return self.head.ref if self.is_lease else (self.head.action or "an unknown action")


def group_entries(rows: list[EntryRow]) -> list[Group]:
    """Each lease alone; everything else by the step (and key, and action) that made it, in the
    order the entries were first recorded."""

    def key(row: EntryRow) -> tuple[str, ...]:
        if row.kind == LEASE_KIND:
            return ("lease", str(row.entry_id))
        return (
            "step",
            row.step,
            row.idempotency_key,
            row.action or "",
            str(row.kind == PLACEHOLDER_KIND),
        )

    ordered = sorted(rows, key=key)
    groups = [Group(list(members)) for _, members in groupby(ordered, key=key)]
    first_seen = {key(r): i for i, r in reversed(list(enumerate(rows)))}
    return sorted(groups, key=lambda g: first_seen[key(g.head)])

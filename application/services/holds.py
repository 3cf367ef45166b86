"""SPEC "A person's act never undoes another live run": which lease entries of a run another
live run now holds the target of. A person's retry leaves them alone, and the plan, the
confirmation and the answer say so; when that run ends, its own restore puts back what it found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from runledger.application.services.leases import CORE_LEASE, CoreLease
from runledger.application.services.ledger import Ledger
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND
from runledger.domain.spec import RunSpec
from runledger.projections.queries import Queries
from runledger.projections.rows import EntryRow


@dataclass(frozen=True)
class Held:
    """A lease entry a person's act leaves as it is: another live run holds its target."""

    entry_id: UUID
    name: str
    lease: str
    target: str
    holder: UUID
    until: datetime | None
    said: str


def held_said(target: str, holder: UUID, until: datetime | None, now: datetime) -> str:
    """Why the entry is not restored, in the words core.lease's refusal uses for a held target."""
    if until is None:
        return f"{target} is held by run {holder}: not restored"
    when = f"{until.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    if until <= now:
        return (
            f"{target} is held by run {holder}, whose lease ended at {when} and has not been "
            "given back yet: not restored"
        )
    return f"{target} is held by run {holder} until {when}: not restored"


class Holds:
    """Asks core.lease who holds each lease target a run's entries would restore."""

    def __init__(
        self,
        *,
        core_lease: CoreLease,
        ledger: Ledger,
        queries: Queries,
        clock: Callable[[], datetime],
    ) -> None:
        self.core_lease = core_lease
        self.ledger = ledger
        self.queries = queries
        self.clock = clock

    def of_run(self, run_id: UUID) -> list[Held]:
        """The run's unresolved lease entries whose target another live run holds now."""
        return self.among(run_id, self.queries.unresolved_entries(run_id))

    def among(self, run_id: UUID, rows: Iterable[EntryRow]) -> list[Held]:
        """Which of these entries of the run another live run holds the target of, now."""
        now = self.clock()
        found = []
        for row, (lease, target) in self._targets(run_id, rows):
            holder = self.core_lease.holder(lease, target, now)
            other = None if holder is None else holder.run_id
            if holder is not None and other is not None and other != run_id:
                said = held_said(target, other, holder.until, now)
                found.append(Held(row.entry_id, row.name, lease, target, other, holder.until, said))
        return found

    def _targets(
        self, run_id: UUID, rows: Iterable[EntryRow]
    ) -> list[tuple[EntryRow, tuple[str, str]]]:
        """Each lease entry with its lease and target: an override names them in its ref
        (``<lease-id>#<target>``), a core.lease placeholder in its step's params."""
        targets = []
        params: dict[str, tuple[str, str]] | None = None
        for row in rows:
            if row.kind == LEASE_KIND:
                lease, sep, target = row.ref.partition("#")
                if sep:
                    targets.append((row, (lease, target)))
            elif row.kind == PLACEHOLDER_KIND and row.action == CORE_LEASE:
                params = self._params(run_id) if params is None else params
                step = params.get(row.step)
                if step is not None:
                    targets.append((row, step))
        return targets

    def _params(self, run_id: UUID) -> dict[str, tuple[str, str]]:
        """The lease and target of each core.lease step of the run's spec, by step id."""
        run = self.ledger.get_run(run_id)
        if run.spec is None:
            return {}
        steps = [s for p in RunSpec.stored(run.spec).phases for s in p.steps]
        return {
            s.id: (str(s.params.get("lease")), str(s.params.get("target")))
            for s in steps
            if s.action == CORE_LEASE
        }

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError
from pydantic import ValidationError

from runledger.application.errors import BadRequest, NotFound
from runledger.application.modules.answers import NamedResource
from runledger.application.services.inputs import person, reason
from runledger.application.services.named import late_line, new_entries
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.errors import KeyGivenBack, RunNotRunning
from runledger.domain.resource import PLACEHOLDER_KIND, Resource
from runledger.domain.run import Run
from runledger.domain.runlog import LogEntry
from runledger.domain.values import validation_problem
from runledger.projections.queries import Queries


def save_with_retry(
    app: LedgerApp, build: Callable[[], Sequence[Aggregate]], tries: int = 3
) -> int:
    """Load, decide and save; when another writer got there first, decide again on fresh state.

    Answers how many aggregates the winning save changed.
    """
    for attempt in range(tries):
        changed = [a for a in build() if a.pending_events]
        if not changed:
            return 0
        try:
            app.save(*changed)
            return len(changed)
        except IntegrityError:
            if attempt == tries - 1:
                raise
    return 0


class Ledger:
    """Recording what runs change in the world, and the decisions people make about it."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        queries: Queries,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.streams = streams
        self.queries = queries
        self.clock = clock

    def abort_run(self, run_id: UUID, why: str, by: str | None = None) -> None:
        run = self.get_run(run_id)
        run.abort(reason(why), self.clock(), None if by is None else person(by, "aborting a run"))
        self.app.save(run)

    def cancel_run(self, run_id: UUID, by: str, *, cleanup: bool) -> int:
        """End the run. Without cleanup, every unresolved entry is kept in the person's name,
        in the same save; answers how many entries were kept."""
        person(by, "cancelling a run")
        now = self.clock()
        run = self.get_run(run_id)
        run.cancel(by, cleanup, now)
        if cleanup:
            self.app.save(run)
            return 0
        ids = [e.entry_id for e in self.queries.unresolved_entries(run_id)]
        loaded = self.streams.load(Resource, ids).values()
        # An overdue lease the sweep is giving back right now is left to that call's verdict.
        kept = [e for e in loaded if e.unresolved and not e.under_live_claim(now)]
        for entry in kept:
            entry.keep(by, now)
        line = LogEntry(
            key=f"kept|{run_id}",
            run_id=run_id,
            kind="cleanup.kept",
            detail={"by": by, "resources": len(kept)},
            at=now,
        )
        self.app.save(run, *kept, line)
        return len(kept)

    def record_placeholder(
        self, run_id: UUID, step: str, module: str, action: str, idempotency_key: str
    ) -> UUID:
        """Ledger a dispatch before it is made; recording it again reuses the same entry."""
        return self._record(
            run_id,
            step=step,
            kind=PLACEHOLDER_KIND,
            ref=idempotency_key,
            module=module,
            action=action,
            idempotency_key=idempotency_key,
            payload={"action": action},
        )

    def supersede(
        self,
        placeholder_id: UUID,
        resources: Sequence[dict[str, Any] | NamedResource],
        also: Sequence[Aggregate] = (),
    ) -> list[UUID]:
        """The dispatch answered: record what it named and retire its placeholder, atomically."""
        try:
            named = [NamedResource.model_validate(r) for r in resources]
        except ValidationError as error:
            said = validation_problem(error)
            raise BadRequest(f"a named resource is malformed: {said}") from None
        placeholder = self._entry(placeholder_id)
        ids = [
            Resource.create_id(placeholder.run_id, placeholder.step, r.kind, r.ref) for r in named
        ]
        existing = self.streams.load(Resource, ids)
        now = self.clock()
        created = new_entries(placeholder, named, ids, existing, now)
        if placeholder.unresolved:
            placeholder.supersede(now)
            self.app.save(placeholder, *created, *also)
            return ids
        if placeholder.state == "superseded":
            # Answered before (a late answer, or another worker's): what this answer names
            # beyond it is ledgered too, so nothing a module reports is dropped.
            self.app.save(*created, *also)
            return ids
        # The run ended while this dispatch was in flight and its placeholder was settled. What
        # the module made is still in the world: ledger it, kept if a person chose to keep all.
        if placeholder.kept_by is not None:
            for entry in created:
                entry.keep(placeholder.kept_by, now)
        self.app.save(*created, *also)
        return ids

    def record_late(
        self, placeholder_id: UUID, resources: Sequence[NamedResource], *, step: str, action: str
    ) -> list[UUID]:
        """A dispatch abandoned at its deadline answered after all: what it named is ledgered
        on its run, even one that has ended (the sweep then gives it back), with a log line."""
        for attempt in range(3):
            try:
                ids = self.supersede(placeholder_id, resources)
                break
            except IntegrityError:  # the sweep or a retry moved the placeholder: decide again
                if attempt == 2:
                    raise
        placeholder = self._entry(placeholder_id)
        run = self.get_run(placeholder.run_id)
        detail = {"step": step, "action": action, "entries": len(ids), "run": run.status}
        self.app.save(late_line(placeholder, detail, self.clock()))
        return ids

    def _record(self, run_id: UUID, **fields: Any) -> UUID:
        run = self.get_run(run_id)
        if run.is_terminal:
            raise RunNotRunning(f"run {run_id} has ended ({run.status}); nothing more is ledgered")
        fields.setdefault("payload", None)
        fields.setdefault("until", None)
        entry = Resource(run_id=run_id, member_key=None, at=self.clock(), **fields)
        try:
            self.app.save(entry)
        except IntegrityError:
            # It exists: recording the same entry twice is a no-op, unless it was given back:
            # a key given back is ended, and nothing is dispatched under it again.
            found = self._entry(entry.id)
            if found.is_placeholder and not found.unresolved and found.state != "superseded":
                raise KeyGivenBack(
                    f"step {fields['step']} of run {run_id}: its key was given back "
                    f"({found.state}); nothing is dispatched under it again"
                ) from None
        return entry.id

    def get_run(self, run_id: UUID) -> Run:
        try:
            run: object = self.app.repository.get(run_id)
        except AggregateNotFoundError:
            raise NotFound(f"no run {run_id}") from None
        if not isinstance(run, Run):
            raise NotFound(f"{run_id} is not a run")
        return run

    def _entry(self, entry_id: UUID) -> Resource:
        try:
            entry: object = self.app.repository.get(entry_id)
        except AggregateNotFoundError:
            raise NotFound(f"no ledger entry {entry_id}") from None
        if not isinstance(entry, Resource):
            raise NotFound(f"{entry_id} is not a ledger entry")
        return entry

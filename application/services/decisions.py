"""SPEC "A person decides": an unresolved entry of an ended run is kept as it is, with a reason,
or retried alone; "keep what is left" keeps every unresolved entry of an ended run. Each act is
in the person's name and writes one log line saying who and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from runledger.application.errors import Conflict, NotFound
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.holds import Holds
from runledger.application.services.inputs import person, reason
from runledger.application.services.ledger import Ledger, save_with_retry
from runledger.application.services.sweep.groups import Group
from runledger.application.services.sweep.verdicts import Retried, Summary
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.fate import UNRESOLVED
from runledger.domain.resource import Resource
from runledger.domain.runlog import LogEntry, LogKind
from runledger.projections.queries import Queries
from runledger.projections.rows import EntryRow


@dataclass(frozen=True)
class Kept:
    """What a person kept: the entries' names by id, with who and why."""

    run_id: UUID
    by: str
    reason: str
    entries: dict[UUID, str]


@dataclass(frozen=True)
class RetriedEntry:
    """One entry asked again: its group's pass, or why it was left as it is (``retried.held``)."""

    run_id: UUID
    entry_id: UUID
    name: str
    retried: Retried


class Decisions:
    """Keeping or retrying what an ended run left unresolved, one entry or all of it."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        queries: Queries,
        ledger: Ledger,
        cleanup: Cleanup,
        holds: Holds,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.streams = streams
        self.queries = queries
        self.ledger = ledger
        self.cleanup = cleanup
        self.holds = holds
        self.clock = clock

    def keep_one(self, run_id: UUID, entry_id: UUID, by: str, why: str) -> Kept:
        """Accept one unresolved entry of an ended run as it stands in the world."""
        by, why = person(by, "keeping an entry"), reason(why)
        self._ended(run_id)
        row = self._open_row(run_id, entry_id)
        return self._keep(run_id, [row.entry_id], by, why, rest=False)

    def keep_rest(self, run_id: UUID, by: str, why: str) -> Kept:
        """Accept every entry an ended run left unresolved, with one reason."""
        by, why = person(by, "keeping what is left"), reason(why)
        name = self._ended(run_id)
        ids = [row.entry_id for row in self.queries.unresolved_entries(run_id)]
        if not ids:
            raise Conflict(f"run {name} ({run_id}) has nothing left to keep")
        return self._keep(run_id, ids, by, why, rest=True)

    def retry_one(
        self, run_id: UUID, entry_id: UUID, by: str, why: str | None = None
    ) -> RetriedEntry:
        """Reset one unresolved entry's attempts and work its group now. A lease entry whose
        target another live run holds is left as it is, and the answer says why."""
        by = person(by, "retrying an entry")
        why = None if why is None else reason(why)
        self._ended(run_id)
        row = self._open_row(run_id, entry_id)
        held = {h.entry_id: h for h in self.holds.among(run_id, [row])}
        now = self.clock()

        def reset() -> list[Any]:
            entries = [] if held else self._settled([entry_id], now)
            for entry in entries:
                entry.reset_attempts(by, now)
            detail = _detail(by, why, entry=row.name)
            if held:
                detail["held"] = held[entry_id].said
            return [*entries, _line(run_id, "cleanup.retry_one", detail, now)]

        def leave(group: Group) -> bool:
            if all(r.entry_id != entry_id for r in group.rows):
                return True
            # Asked again right before the pass: a run may have taken the target since the reset.
            held.update((h.entry_id, h) for h in self.holds.among(run_id, group.rows))
            return entry_id in held

        save_with_retry(self.app, reset)
        summary = Summary(by=by) if held else self.cleanup.work_now(run_id, by, leave)
        retried = Retried(**vars(summary), held=list(held.values()))
        return RetriedEntry(run_id, entry_id, row.name, retried)

    def _keep(self, run_id: UUID, ids: list[UUID], by: str, why: str, *, rest: bool) -> Kept:
        """Keep these entries in one save with the act's log line. What is left is what is
        unresolved when it is saved: an entry given back meanwhile is not kept."""
        now = self.clock()
        kept: dict[UUID, str] = {}

        def keep() -> list[Any]:
            entries = self._settled(ids, now, only_unresolved=rest)
            if not entries:
                raise Conflict(f"run {run_id} has nothing left to keep")
            kept.clear()
            for entry in entries:
                entry.keep(by, now, why)
                kept[entry.id] = f"{entry.kind}:{entry.ref}"
            if rest:
                line = _line(
                    run_id, "cleanup.kept_rest", _detail(by, why, resources=len(kept)), now
                )
            else:
                [name] = kept.values()
                line = _line(run_id, "cleanup.kept_one", _detail(by, why, entry=name), now)
            return [*entries, line]

        save_with_retry(self.app, keep)
        return Kept(run_id, by, why, dict(kept))

    def _ended(self, run_id: UUID) -> str:
        """The run's name, once it has ended; else Conflict naming it."""
        run = self.ledger.get_run(run_id)
        if not run.is_terminal:
            raise Conflict(
                f"run {run.name} ({run_id}) is still running: a person decides about its entries "
                "once it has ended; nothing was changed"
            )
        return str(run.name)

    def _open_row(self, run_id: UUID, entry_id: UUID) -> EntryRow:
        row = self.queries.entry(entry_id)
        if row is None or row.run_id != run_id:
            raise NotFound(f"run {run_id} has no entry {entry_id}")
        if row.status not in UNRESOLVED:
            raise Conflict(f"{row.name} is already {row.status}: there is nothing to decide")
        return row

    def _settled(
        self, ids: list[UUID], now: datetime, *, only_unresolved: bool = False
    ) -> list[Resource]:
        """The entries as their streams have them now, with no call out on any; one resolved
        since it was read is left out (``only_unresolved``) or refused. A refusal is Conflict,
        and nothing is written."""
        loaded = self.streams.load(Resource, ids)
        found = []
        for entry_id in ids:
            entry = loaded.get(entry_id)
            if entry is None:
                raise NotFound(f"no ledger entry {entry_id}")
            name = f"{entry.kind}:{entry.ref}"
            if not entry.unresolved and only_unresolved:
                continue
            if not entry.unresolved:
                raise Conflict(f"{name} is already {entry.state}: there is nothing to decide")
            if entry.under_live_claim(now):
                raise Conflict(
                    f"{name} is being given back by {entry.claim_worker} until "
                    f"{entry.claim_expires_at}: decide once that attempt has answered; nothing "
                    "was changed"
                )
            found.append(entry)
        return found


def _detail(by: str, why: str | None, **more: Any) -> dict[str, Any]:
    return {"by": by, **({} if why is None else {"reason": why}), **more}


def _line(run_id: UUID, kind: LogKind, detail: dict[str, Any], at: datetime) -> LogEntry:
    return LogEntry(
        key=f"{kind}|{run_id}|{uuid4()}", run_id=run_id, kind=kind, detail=detail, at=at
    )

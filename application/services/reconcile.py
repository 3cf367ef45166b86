from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import groupby
from typing import Any

from runledger.application.errors import NotFound
from runledger.application.modules.answers import parse_reconcile
from runledger.application.modules.deadline import call_with_deadline
from runledger.application.modules.protocol import Registry
from runledger.application.services.ledger import save_with_retry
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.domain.resource import MAX_KIND, MAX_REF, PLACEHOLDER_KIND, Resource
from runledger.domain.runlog import LogEntry, LogKind
from runledger.domain.text import safe_text
from runledger.domain.values import check_text, text_problem
from runledger.projections.queries import Queries
from runledger.projections.rows import EntryRow

log = logging.getLogger("runledger.reconcile")

EXPIRED_REASON = "the world ended it at its deadline"
ORPHANED_REASON = "the module reports this is no longer in force"


@dataclass
class ReconcileSummary:
    asked: int = 0
    in_force: int = 0
    orphaned: int = 0
    expired: int = 0
    unanswered: int = 0


class Reconciler:
    """Answers "is any of it still there?" for one module's live entries, and settles expiries.

    The owner is always the caller's binding (the loader's), never a module's argument, so a
    module cannot close another module's entries.
    """

    def __init__(
        self,
        *,
        app: LedgerApp,
        streams: Streams,
        queries: Queries,
        registry: Registry,
        settings: Settings,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.streams = streams
        self.queries = queries
        self.registry = registry
        self.settings = settings
        self.clock = clock

    def expire(self, owner: str, kind: Any, ref: Any) -> dict[str, int]:
        """The world ended one of the owner's resources at its deadline."""
        if not _valid_name(kind, MAX_KIND) or not _valid_name(ref, MAX_REF):
            return {"expired": 0}
        ids = [
            e.entry_id
            for e in self.queries.unresolved_matching(owner, kind, ref)
            if e.kind != PLACEHOLDER_KIND
        ]
        now = self.clock()

        def decide() -> list[Any]:
            entries = self.streams.load(Resource, ids).values()
            return [x for e in entries if e.unresolved for x in _expire(e, owner, now)]

        changed = save_with_retry(self.app, decide)
        return {"expired": changed // 2}

    def asked_by_person(self, owner: str, by: str) -> ReconcileSummary:
        """An admin's ask (the API, the CLI) of a module this process loaded, named on each
        line it writes; NotFound when no action here belongs to ``owner``."""
        check_text(by, "by", limit=MAX_REF, empty=False)
        if not any(a.module == owner for a in self.registry.actions.values()):
            raise NotFound(f"no module named {safe_text(owner, 100)!r} is loaded in this process")
        return self.reconcile_module(owner, asked_by=by)

    def reconcile_module(self, owner: str, asked_by: str | None = None) -> ReconcileSummary:
        """Ask ``owner`` which of its live entries are still in force; settle the rest."""
        summary = ReconcileSummary()
        rows = self.queries.live_named_entries(owner)

        def key(row: EntryRow) -> tuple[str, str, str]:
            return (row.step, row.idempotency_key, row.action or "")

        for _, members in groupby(sorted(rows, key=key), key=key):
            self._reconcile_group(owner, list(members), summary, asked_by)
        return summary

    def reconcile_all(self) -> dict[str, ReconcileSummary]:
        """Core's own boot: ask every module that owns a live entry."""
        found: dict[str, ReconcileSummary] = {}
        for owner in self.queries.modules_with_live_entries():
            try:
                found[owner] = self.reconcile_module(owner)
            except Exception:  # one module's failure must not hide the others'
                log.exception("reconcile of module %s failed", owner)
        return found

    def _reconcile_group(
        self, owner: str, rows: list[EntryRow], summary: ReconcileSummary, asked_by: str | None
    ) -> None:
        head = rows[0]
        action = self.registry.action(head.action)
        if action is None or action.reconcile is None or action.module != owner:
            summary.unanswered += len(rows)
            return
        summary.asked += len(rows)
        resources = [{"kind": r.kind, "ref": r.ref, "payload": r.payload} for r in rows]
        budget = timedelta(milliseconds=action.budget_ms or self.settings.default_budget_ms)
        outcome = call_with_deadline(
            action.reconcile,
            {"run_id": str(head.run_id), "resources": resources},
            budget.total_seconds(),
        )
        held = parse_reconcile(outcome)
        if held is None:  # "I do not know" is never "it is gone"
            summary.unanswered += len(rows)
            return
        summary.in_force += sum(1 for r in rows if r.ref in held)
        gone = [r.entry_id for r in rows if r.ref not in held]
        now = self.clock()
        settled = {"expired": 0, "orphaned": 0}

        def decide() -> list[Any]:
            changed: list[Any] = []
            settled.update(expired=0, orphaned=0)
            for entry in self.streams.load(Resource, gone).values():
                if entry.state not in ("live", "failing"):
                    continue
                past_until = entry.until is not None and entry.until <= now
                outcome = "expired" if past_until else "orphaned"
                changed += (
                    _expire(entry, owner, now, asked_by)
                    if past_until
                    else _orphan(entry, owner, action.id, now, asked_by)
                )
                settled[outcome] += 1
            return changed

        save_with_retry(self.app, decide)
        summary.expired += settled["expired"]
        summary.orphaned += settled["orphaned"]


def _valid_name(value: Any, limit: int) -> bool:
    return type(value) is str and 0 < len(value) <= limit and text_problem(value) is None


def _expire(entry: Resource, owner: str, now: datetime, asked_by: str | None = None) -> list[Any]:
    entry.expire(EXPIRED_REASON, now)
    return [entry, _line(entry, "resource.expired", _asked({"module": owner}, asked_by), now)]


def _orphan(
    entry: Resource, owner: str, action: str, now: datetime, asked_by: str | None
) -> list[Any]:
    entry.orphan(ORPHANED_REASON, now)
    detail = _asked({"module": owner, "action": action}, asked_by)
    return [entry, _line(entry, "resource.orphaned", detail, now)]


def _asked(detail: dict[str, Any], asked_by: str | None) -> dict[str, Any]:
    return detail if asked_by is None else {**detail, "asked_by": asked_by}


def _line(entry: Resource, kind: LogKind, detail: dict[str, Any], now: datetime) -> LogEntry:
    return LogEntry(
        key=f"{kind}|{entry.id}|{entry.version}",
        run_id=entry.run_id,
        kind=kind,
        detail={**detail, "resource": f"{entry.kind}:{entry.ref}"},
        at=now,
    )

"""A server's HTTP API as a door (door.py): every read and act as the token's person, answered
in the API's own schemas, so that a command prints what it prints on the store directly."""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import Any
from uuid import UUID

from runledger.application.cli.doors.contexts import Server
from runledger.application.cli.doors.door import entry_id, entry_ref
from runledger.application.cli.doors.http import Http, ServerTrouble, dumped
from runledger.application.cli.doors.remote_more import RemoteFleet
from runledger.application.cli.doors.webhooks import RemoteWebhooks
from runledger.application.cli.errors import Usage
from runledger.application.display import safe_repr
from runledger.application.errors import BadRequest
from runledger.application.reading.schemas import bulk, decisions, history, runs
from runledger.projections.pages import RunFilter

RUNS = "/admin/events/runs"
MOST_LOG_LINES = 5_000
"""The most lines the API's log route answers at once."""


class Remote(RemoteFleet, RemoteWebhooks):
    def __init__(self, server: Server) -> None:
        self.http = Http(server)

    def __enter__(self) -> Remote:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.http.close()

    def run_page(self, where: RunFilter, limit: int, cursor: str | None) -> runs.RunPage:
        asked: dict[str, Any] = {"status": where.status, "cleanup_status": where.cleanup_status}
        asked |= {"name": where.name, "limit": limit, "cursor": cursor}
        try:
            return self.http.read(runs.RunPage, "GET", RUNS, params=_given(asked))
        except BadRequest:
            if cursor is None:
                raise
            raise Usage(f"--cursor {safe_repr(cursor)} is not a cursor runs gave out") from None

    def run_detail(self, run_id: UUID) -> runs.RunDetail:
        return self.http.read(runs.RunDetail, "GET", f"{RUNS}/{run_id}")

    def log_page(self, run_id: UUID, limit: int, since: datetime | None) -> runs.LogPage:
        """The run's last lines (those since ``since``), in the page the CLI prints: the API's
        newer envelope (``items``) and its older page (``lines``) alike."""
        limit, path = min(limit, MOST_LOG_LINES), f"{RUNS}/{run_id}/log"
        found = self.http.send("GET", path, params={"limit": limit})
        if not isinstance(found, dict):
            raise ServerTrouble(f"{self.http.url}{path} did not answer as runledger's API does")
        listed = found.get("items", found.get("lines"))
        asked = {"run_id": run_id, "lines": listed, "total": found.get("total"), "earlier": None}
        page = self.http.model(runs.LogPage, asked, path)
        lines = [line for line in page.lines if since is None or line.at >= since]
        earlier = lines[0].position if lines and page.total > len(lines) else None
        return runs.LogPage(run_id=run_id, lines=lines, total=page.total, earlier=earlier)

    def start(self, text: str, key: str | None) -> runs.RunDetail:
        sent = {"content": text.encode(), "headers": {"Content-Type": "application/json"}}
        found = self.http.send("POST", RUNS, key=key, **sent)
        return self.http.model(runs.RunDetail, found, RUNS)

    def advance(self, run_id: UUID, by: str | None, key: str | None) -> runs.Advanced:
        return self.http.read(runs.Advanced, "POST", f"{RUNS}/{run_id}/advance", key=key)

    def cancel(
        self, run_id: UUID, by: str | None, cleanup: bool, key: str | None
    ) -> runs.RunDetail:
        path, body = f"{RUNS}/{run_id}/cancel", {"cleanup": cleanup}
        return self.http.read(runs.RunDetail, "POST", path, json=body, key=key)

    def abort(self, run_id: UUID, reason: str, key: str | None) -> runs.RunDetail:
        path, body = f"{RUNS}/{run_id}/abort", {"reason": reason}
        return self.http.read(runs.RunDetail, "POST", path, json=body, key=key)

    def cleanup_one(self, run_id: UUID, by: str | None, key: str | None) -> runs.CleanupSummary:
        path = f"{RUNS}/{run_id}/cleanup"
        return self.http.read(runs.CleanupSummary, "POST", path, key=key)

    def plan(self, where: bulk.Selector) -> bulk.Plan:
        return self.http.read(bulk.Plan, "POST", "/admin/events/cleanup/plan", json=dumped(where))

    def apply(
        self, where: bulk.Selector, fingerprint: str, by: str | None, key: str | None
    ) -> bulk.Applied:
        body = dumped(bulk.Apply(where=where, fingerprint=fingerprint))
        path = "/admin/events/cleanup/apply"
        return self.http.read(bulk.Applied, "POST", path, json=body, key=key)

    def run_names(self, run_ids: list[UUID]) -> dict[UUID, str]:
        return {run_id: self.run_detail(run_id).run.name for run_id in run_ids}

    def keep(
        self, which: tuple[UUID, UUID | None], by: str | None, reason: str, key: str | None
    ) -> decisions.Kept:
        run_id, entry_id = which
        path = f"{RUNS}/{run_id}" + ("" if entry_id is None else f"/entries/{entry_id}")
        body = {"reason": reason}
        return self.http.read(decisions.Kept, "POST", f"{path}/keep", json=body, key=key)

    def retry(
        self, which: tuple[UUID, UUID], by: str | None, reason: str | None, key: str | None
    ) -> decisions.EntryRetried:
        path = f"{RUNS}/{which[0]}/entries/{which[1]}/retry"
        body = {} if reason is None else {"reason": reason}
        return self.http.read(decisions.EntryRetried, "POST", path, json=body, key=key)

    def replay(self, run_id: UUID, as_of: datetime | None, entry: str | None) -> history.Replay:
        when = None if as_of is None else as_of.isoformat()
        asked = _given({"as_of": when, "entry": entry_ref(entry)})
        return self.http.read(history.Replay, "GET", f"{RUNS}/{run_id}/replay", params=asked)

    def step(self, entry: str, upto: int | None) -> history.EntryHistory:
        path = f"/admin/entries/{entry_id(entry, self._entries_named)}/history"
        found = self.http.read(history.EntryHistory, "GET", path, params=_given({"upto": upto}))
        return found if upto is None else found.model_copy(update={"frames": found.frames[-1:]})

    def _entries_named(self, ref: str) -> list[runs.Entry]:
        return self.http.items(runs.Entry, "/admin/entries", {"ref": ref})


def _given(asked: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in asked.items() if v is not None}

"""What the commands that read or act need, whichever way they reach the data: the store
directly (doors/local.py, an administrator's act) or a server's HTTP API as the token's person
(doors/remote.py). Each answers the API's own schemas, so a command prints the same either way.

``by`` is the person a command's --by names: the local door needs it, the remote door is never
given one (the token names the person). ``key`` is --idempotency-key."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import Protocol
from uuid import UUID

from runledger.application.cli.doors.webhooks import WebhooksDoor
from runledger.application.display import safe_repr
from runledger.application.errors import BadRequest, NotFound
from runledger.application.reading.schemas import bulk, decisions, fleet, history, runs
from runledger.application.reading.schemas import definitions as defs
from runledger.application.reading.schemas.tokens import IssuedToken, Token
from runledger.domain.occurrence import OccurrenceState
from runledger.domain.values import check_text
from runledger.projections.entry_reads import NAMED_AT_MOST
from runledger.projections.pages import RunFilter

Key = str | None
By = str | None
CANDIDATES = 5
"""How many of the entries an ambiguous ref names a refusal lists."""


def entry_id(text: str, named: Callable[[str], list[runs.Entry]]) -> UUID:
    """An entry named by its id, or by a ref (or kind:ref) that names exactly one of the
    entries ``named`` finds: the rule of `step ENTRY` whichever door asks."""
    try:
        return UUID(text)
    except ValueError:
        return _one_named(text, named(check_text(text, "ENTRY")))


def _one_named(text: str, found: list[runs.Entry]) -> UUID:
    if not found:
        raise NotFound(f"no ledger entry named {safe_repr(text)}")
    if len(found) > 1:
        names = ", ".join(f"{e.entry_id} (run {e.run_id})" for e in found[:CANDIDATES])
        many = f"at least {len(found)}" if len(found) >= NAMED_AT_MOST else str(len(found))
        raise BadRequest(f"{many} entries are named {safe_repr(text)}; pass one id: {names}")
    return found[0].entry_id


def entry_ref(text: str | None) -> str | None:
    """replay's --entry, checked before either door looks for it (a server is sent only text
    that a URL can carry)."""
    return None if text is None else check_text(text, "--entry")


class RunsDoor(Protocol):
    def run_page(self, where: RunFilter, limit: int, cursor: str | None) -> runs.RunPage: ...
    def run_detail(self, run_id: UUID) -> runs.RunDetail: ...
    def log_page(self, run_id: UUID, limit: int, since: datetime | None) -> runs.LogPage: ...
    def start(self, text: str, key: Key) -> runs.RunDetail: ...
    def advance(self, run_id: UUID, by: By, key: Key) -> runs.Advanced: ...
    def cancel(self, run_id: UUID, by: By, cleanup: bool, key: Key) -> runs.RunDetail: ...
    def abort(self, run_id: UUID, reason: str, key: Key) -> runs.RunDetail: ...
    def cleanup_one(self, run_id: UUID, by: By, key: Key) -> runs.CleanupSummary: ...
    def plan(self, where: bulk.Selector) -> bulk.Plan: ...
    def apply(self, where: bulk.Selector, fingerprint: str, by: By, key: Key) -> bulk.Applied: ...
    def run_names(self, run_ids: list[UUID]) -> dict[UUID, str]: ...
    def keep(
        self, which: tuple[UUID, UUID | None], by: By, reason: str, key: Key
    ) -> decisions.Kept: ...
    def retry(
        self, which: tuple[UUID, UUID], by: By, reason: str | None, key: Key
    ) -> decisions.EntryRetried: ...
    def replay(self, run_id: UUID, as_of: datetime | None, entry: str | None) -> history.Replay: ...
    def step(self, entry: str, upto: int | None) -> history.EntryHistory: ...


class DefinitionsDoor(Protocol):
    def create_definition(
        self, name: str, text: str, by: By, key: Key
    ) -> defs.DefinitionDetail: ...
    def edit_draft(self, name: str, text: str, by: By) -> defs.DraftSaved: ...
    def verify(self, name: str, by: By, key: Key) -> defs.Verified: ...
    def publish(self, name: str, by: By, key: Key) -> defs.Published: ...
    def definitions(self) -> list[defs.DefinitionSummary]: ...
    def definition(self, name: str) -> defs.DefinitionDetail: ...
    def version(self, name: str, version: int) -> defs.VersionDetail: ...
    def versions(self, name: str) -> list[defs.VersionSummary]: ...
    def schedule(self, name: str, at: datetime, by: By, key: Key) -> defs.Occurrence: ...
    def occurrences(
        self, name: str | None, state: OccurrenceState | None
    ) -> list[defs.Occurrence]: ...
    def cancel_occurrence(self, occurrence_id: UUID, by: By, key: Key) -> defs.Occurrence: ...


class FleetDoor(Protocol):
    def runners(self, limit: int) -> list[fleet.Runner]: ...
    def modules(self) -> list[fleet.Module]: ...
    def reconcile(self, module: str, by: By) -> fleet.Reconciled: ...
    def projections(self) -> tuple[list[fleet.Projection], str | None]:
        """Each projection, and a note when where they are stuck could not be tried."""
        ...

    def issue_token(self, name: str, role: str, key: Key) -> IssuedToken: ...
    def tokens(self) -> list[Token]: ...
    def revoke_token(self, token_id: UUID) -> Token: ...


class Door(RunsDoor, DefinitionsDoor, FleetDoor, WebhooksDoor, Protocol):
    """Every read and act of the commands, through one door or the other; closed on leaving
    its ``with``."""

    def __enter__(self) -> Door: ...
    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None: ...

"""A server's HTTP API as a door: definitions and occurrences, and what serves the runs."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.application.cli.doors.http import Http, part
from runledger.application.reading.schemas import definitions as defs
from runledger.application.reading.schemas import fleet
from runledger.application.reading.schemas.tokens import IssuedToken, Me, Token
from runledger.domain.occurrence import OccurrenceState

DEFINITIONS = "/admin/definitions"


def spec(text: str) -> Any:
    """A spec file's JSON as a body carries it; text that is not JSON is sent as a string, for
    the server to refuse in its own words."""
    try:
        return json.loads(text)
    except ValueError:
        return text


class RemoteDefinitions:
    http: Http

    def create_definition(
        self, name: str, text: str, by: str | None, key: str | None
    ) -> defs.DefinitionDetail:
        body = {"name": name, "spec": spec(text)}
        return self.http.read(defs.DefinitionDetail, "POST", DEFINITIONS, json=body, key=key)

    def edit_draft(self, name: str, text: str, by: str | None) -> defs.DraftSaved:
        path = f"{DEFINITIONS}/{part(name)}/draft"
        return self.http.read(defs.DraftSaved, "PUT", path, json={"spec": spec(text)})

    def verify(self, name: str, by: str | None, key: str | None) -> defs.Verified:
        path = f"{DEFINITIONS}/{part(name)}/verify"
        return self.http.read(defs.Verified, "POST", path, key=key)

    def publish(self, name: str, by: str | None, key: str | None) -> defs.Published:
        path = f"{DEFINITIONS}/{part(name)}/publish"
        return self.http.read(defs.Published, "POST", path, key=key)

    def definitions(self) -> list[defs.DefinitionSummary]:
        return self.http.items(defs.DefinitionSummary, DEFINITIONS)

    def definition(self, name: str) -> defs.DefinitionDetail:
        return self.http.read(defs.DefinitionDetail, "GET", f"{DEFINITIONS}/{part(name)}")

    def version(self, name: str, version: int) -> defs.VersionDetail:
        path = f"{DEFINITIONS}/{part(name)}/versions/{version}"
        return self.http.read(defs.VersionDetail, "GET", path)

    def versions(self, name: str) -> list[defs.VersionSummary]:
        return self.http.items(defs.VersionSummary, f"{DEFINITIONS}/{part(name)}/versions")

    def schedule(self, name: str, at: datetime, by: str | None, key: str | None) -> defs.Occurrence:
        path, body = f"{DEFINITIONS}/{part(name)}/occurrences", {"at": at.isoformat()}
        return self.http.read(defs.Occurrence, "POST", path, json=body, key=key)

    def occurrences(self, name: str | None, state: OccurrenceState | None) -> list[defs.Occurrence]:
        asked = {k: v for k, v in (("definition", name), ("state", state)) if v is not None}
        return self.http.items(defs.Occurrence, "/admin/occurrences", asked)

    def cancel_occurrence(
        self, occurrence_id: UUID, by: str | None, key: str | None
    ) -> defs.Occurrence:
        path = f"/admin/occurrences/{occurrence_id}/cancel"
        return self.http.read(defs.Occurrence, "POST", path, key=key)


class RemoteFleet(RemoteDefinitions):
    def runners(self, limit: int) -> list[fleet.Runner]:
        return self.http.items(fleet.Runner, "/admin/runners", {"limit": limit})[:limit]

    def modules(self) -> list[fleet.Module]:
        return self.http.items(fleet.Module, "/admin/modules")

    def reconcile(self, module: str, by: str | None) -> fleet.Reconciled:
        path = f"/admin/modules/{part(module)}/reconcile"
        return self.http.read(fleet.Reconciled, "POST", path)

    def projections(self) -> tuple[list[fleet.Projection], str | None]:
        return self.http.items(fleet.Projection, "/admin/projections"), None

    def issue_token(self, name: str, role: str, key: str | None) -> IssuedToken:
        body = {"name": name, "role": role}
        return self.http.read(IssuedToken, "POST", "/admin/tokens", json=body, key=key)

    def tokens(self) -> list[Token]:
        return self.http.items(Token, "/admin/tokens")

    def revoke_token(self, token_id: UUID) -> Token:
        return self.http.read(Token, "DELETE", f"/admin/tokens/{token_id}")

    def me(self) -> Me:
        return self.http.read(Me, "GET", "/admin/me")

"""The store opened directly: definitions and occurrences, and what serves the runs (runners,
modules, projections, tokens), as the composition root's services answer them."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from uuid import UUID

from runledger.application.cli.doors.local_runs import LocalRuns, needed
from runledger.application.cli.keyed import answered, keyed_call, once, spec_body, terminal_person
from runledger.application.errors import NotFound
from runledger.application.reading import definitions as answer
from runledger.application.reading.schemas import definitions as defs
from runledger.application.reading.schemas import fleet
from runledger.application.reading.schemas.tokens import IssuedToken, Token
from runledger.application.reading.shapes import projection
from runledger.domain.occurrence import OccurrenceState
from runledger.projections.errors import Stuck

DEFINITIONS = "/admin/definitions"


class LocalDefinitions(LocalRuns):
    def create_definition(
        self, name: str, text: str, by: str | None, key: str | None
    ) -> defs.DefinitionDetail:
        who = needed(by)
        return once(
            self.rl.once,
            (key, who, DEFINITIONS, {"name": name, "spec": spec_body(text)}),
            lambda: answer.detail(self.rl.definitions.create(name, text, who)),
            defs.DefinitionDetail,
            201,
        )

    def edit_draft(self, name: str, text: str, by: str | None) -> defs.DraftSaved:
        edited, changed = self.rl.definitions.edit(name, text, needed(by))
        return answer.draft_saved(edited, changed)

    def verify(self, name: str, by: str | None, key: str | None) -> defs.Verified:
        who = needed(by)
        return self.keyed(
            (key, who, f"{DEFINITIONS}/{name}/verify", None),
            lambda: answer.verified(self.rl.definitions.verify(name, who)),
            defs.Verified,
        )

    def publish(self, name: str, by: str | None, key: str | None) -> defs.Published:
        who = needed(by)
        return self.keyed(
            (key, who, f"{DEFINITIONS}/{name}/publish", None),
            lambda: answer.published(name, self.rl.definitions.publish(name, who)),
            defs.Published,
        )

    def definitions(self) -> list[defs.DefinitionSummary]:
        return [answer.summary(row) for row in self.rl.definitions.listing()]

    def definition(self, name: str) -> defs.DefinitionDetail:
        return answer.detail(self.rl.definitions.get(name))

    def version(self, name: str, version: int) -> defs.VersionDetail:
        return answer.version_detail(self.rl.definitions.version(name, version))

    def versions(self, name: str) -> list[defs.VersionSummary]:
        return [answer.version_summary(v) for v in self.rl.definitions.get(name).versions]

    def schedule(self, name: str, at: datetime, by: str | None, key: str | None) -> defs.Occurrence:
        who, found = needed(by), self.rl.occurrences
        return once(
            self.rl.once,
            (key, who, f"{DEFINITIONS}/{name}/occurrences", {"at": at.isoformat()}),
            lambda: answer.occurrence(found.row(found.schedule(name, at, who).id)),
            defs.Occurrence,
            201,
        )

    def occurrences(self, name: str | None, state: OccurrenceState | None) -> list[defs.Occurrence]:
        return [answer.occurrence(r) for r in self.rl.occurrences.listing(name, state)]

    def cancel_occurrence(
        self, occurrence_id: UUID, by: str | None, key: str | None
    ) -> defs.Occurrence:
        who, found = needed(by), self.rl.occurrences

        def cancelled() -> defs.Occurrence:
            found.cancel(occurrence_id, who)
            return answer.occurrence(found.row(occurrence_id))

        path = f"/admin/occurrences/{occurrence_id}/cancel"
        return self.keyed((key, who, path, None), cancelled, defs.Occurrence)


class LocalFleet(LocalDefinitions):
    def runners(self, limit: int) -> list[fleet.Runner]:
        found = self.rl.fleet.listing(self.rl.clock(), limit)
        return [fleet.Runner.model_validate(info) for info in found]

    def modules(self) -> list[fleet.Module]:
        return self.rl.fleet_answers.modules()

    def reconcile(self, module: str, by: str | None) -> fleet.Reconciled:
        summary = self.rl.reconciler.asked_by_person(module, needed(by))
        return fleet.Reconciled(module=module, **asdict(summary))

    def projections(self) -> tuple[list[fleet.Projection], str | None]:
        """Each projection, with where it is stuck found by applying what is pending in a
        transaction that is rolled back; and a note when that could not be tried."""
        head = self.rl.app.recorder.max_notification_id() or 0
        positions = self.rl.projector.positions()
        stuck, note = self._trial(head, positions)
        views = [
            projection(name, at, head, stuck.get(name)) for name, at in sorted(positions.items())
        ]
        return views, note

    def _trial(self, head: int, positions: dict[str, int]) -> tuple[dict[str, Stuck], str | None]:
        if all(position >= head for position in positions.values()):
            return {}, None
        try:
            return {s.view: s for s in self.rl.projector.trial()}, None
        except Exception as error:
            if self.rl.backend.read_only(error):
                return {}, "not tried: the store is read-only, so nothing pending can be applied"
            raise

    def issue_token(self, name: str, role: str, key: str | None) -> IssuedToken:
        by, issuer = terminal_person(), self.rl.tokens
        call = keyed_call(self.rl.once, key, by, "/admin/tokens", {"name": name, "role": role})
        return answered(
            call,
            lambda: IssuedToken.model_validate(issuer.issue(name, role, by=by)),
            IssuedToken,
            201,
            IssuedToken.withheld,
        )

    def tokens(self) -> list[Token]:
        return [Token.model_validate(t) for t in self.rl.tokens.listing()]

    def revoke_token(self, token_id: UUID) -> Token:
        self.rl.tokens.revoke(token_id, by=terminal_person())
        found = [t for t in self.tokens() if t.token_id == token_id]
        if not found:
            raise NotFound(f"no token {token_id}")
        return found[0]

"""The store opened directly: runs, their acts and their history, as the composition root's
services and the read layer answer them (an administrator's door: --by names who acts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from pydantic import BaseModel

from runledger.application.cli.doors.door import entry_id, entry_ref
from runledger.application.cli.errors import Usage
from runledger.application.cli.keyed import answered, keyed_call, once, spec_body, terminal_person
from runledger.application.cli.log_pages import log_page
from runledger.application.display import safe_repr
from runledger.application.errors import BadQuery
from runledger.application.reading import decided, shapes
from runledger.application.reading.schemas import bulk, decisions, history, runs
from runledger.application.runledger import Runledger
from runledger.projections.pages import RunFilter

M = TypeVar("M", bound=BaseModel)
RUNS = "/admin/events/runs"


def needed(by: str | None) -> str:
    """The person --by names: on the store directly, a command that acts needs one."""
    if by is None:
        raise Usage("--by NAME is needed: who acts (the store is opened directly)")
    return by


@dataclass
class LocalRuns:
    rl: Runledger

    def keyed(
        self, asked: tuple[str | None, str, str, Any], act: Callable[[], M], model: type[M]
    ) -> M:
        """``act()`` once per key, through the very keys the API keeps (cli/keyed.py)."""
        return once(self.rl.once, asked, act, model)

    def run_page(self, where: RunFilter, limit: int, cursor: str | None) -> runs.RunPage:
        try:
            return self.rl.answers.run_page(where, limit, cursor)
        except BadQuery:
            raise Usage(f"--cursor {safe_repr(cursor)} is not a cursor runs gave out") from None

    def run_detail(self, run_id: UUID) -> runs.RunDetail:
        return self.rl.answers.run_detail(run_id)

    def log_page(self, run_id: UUID, limit: int, since: datetime | None) -> runs.LogPage:
        return log_page(self.rl.answers, run_id, limit, since)

    def start(self, text: str, key: str | None) -> runs.RunDetail:
        rl = self.rl
        call = keyed_call(rl.once, key, terminal_person(), RUNS, spec_body(text))
        run_id = None if call is None else call.run_id  # under a key, the key names the run
        return answered(
            call,
            lambda: rl.answers.run_detail(rl.runs.start(text, run_id=run_id)),
            runs.RunDetail,
            201,
        )

    def advance(self, run_id: UUID, by: str | None, key: str | None) -> runs.Advanced:
        who = needed(by)
        return self.keyed(
            (key, who, f"{RUNS}/{run_id}/advance", None),
            lambda: runs.Advanced(run_id=run_id, message=self.rl.runs.advance(run_id, who)),
            runs.Advanced,
        )

    def cancel(
        self, run_id: UUID, by: str | None, cleanup: bool, key: str | None
    ) -> runs.RunDetail:
        who = needed(by)
        return self.keyed(
            (key, who, f"{RUNS}/{run_id}/cancel", {"cleanup": cleanup}),
            self._then(run_id, lambda: self.rl.ledger.cancel_run(run_id, who, cleanup=cleanup)),
            runs.RunDetail,
        )

    def abort(self, run_id: UUID, reason: str, key: str | None) -> runs.RunDetail:
        return self.keyed(
            (key, terminal_person(), f"{RUNS}/{run_id}/abort", {"reason": reason}),
            self._then(run_id, lambda: self.rl.ledger.abort_run(run_id, reason)),
            runs.RunDetail,
        )

    def _then(self, run_id: UUID, act: Callable[[], object]) -> Callable[[], runs.RunDetail]:
        """``act``, answered as the API's route answers it: the run as the act left it."""

        def acted() -> runs.RunDetail:
            act()
            return self.rl.answers.run_detail(run_id)

        return acted

    def cleanup_one(self, run_id: UUID, by: str | None, key: str | None) -> runs.CleanupSummary:
        who, rl = needed(by), self.rl
        rl.answers.known_run(run_id)
        return self.keyed(
            (key, who, f"{RUNS}/{run_id}/cleanup", None),
            lambda: rl.answers.cleanup_summary(run_id, rl.cleanup.manual_cleanup(run_id, who)),
            runs.CleanupSummary,
        )

    def plan(self, where: bulk.Selector) -> bulk.Plan:
        self.rl.projector.catch_up()
        return shapes.plan(where, self.rl.bulk.plan(shapes.where(where)))

    def apply(
        self, where: bulk.Selector, fingerprint: str, by: str | None, key: str | None
    ) -> bulk.Applied:
        who, rl = needed(by), self.rl
        body = bulk.Apply(where=where, fingerprint=fingerprint).model_dump(mode="json")

        def applied() -> bulk.Applied:
            done = rl.bulk.apply(shapes.where(where), fingerprint, who)
            summaries = [rl.answers.cleanup_summary(i, s) for i, s in done.items()]
            return bulk.Applied(fingerprint=fingerprint, runs=summaries)

        return self.keyed((key, who, "/admin/events/cleanup/apply", body), applied, bulk.Applied)

    def run_names(self, run_ids: list[UUID]) -> dict[UUID, str]:
        rl = self.rl
        rows = rl.queries.runs(run_ids, rl.clock(), rl.answers.max_attempts)
        return {row.run_id: row.name for row in rows}

    def keep(
        self, which: tuple[UUID, UUID | None], by: str | None, reason: str, key: str | None
    ) -> decisions.Kept:
        (run_id, entry_id), who, rl = which, needed(by), self.rl
        path = f"{RUNS}/{run_id}" + ("" if entry_id is None else f"/entries/{entry_id}")

        def kept() -> decisions.Kept:
            if entry_id is None:
                return decided.kept(rl.answers, rl.decisions.keep_rest(run_id, who, reason))
            return decided.kept(rl.answers, rl.decisions.keep_one(run_id, entry_id, who, reason))

        return self.keyed((key, who, f"{path}/keep", {"reason": reason}), kept, decisions.Kept)

    def retry(
        self, which: tuple[UUID, UUID], by: str | None, reason: str | None, key: str | None
    ) -> decisions.EntryRetried:
        (run_id, entry_id), who, rl = which, needed(by), self.rl
        return self.keyed(
            (key, who, f"{RUNS}/{run_id}/entries/{entry_id}/retry", {"reason": reason}),
            lambda: decided.retried(
                rl.answers, rl.decisions.retry_one(run_id, entry_id, who, reason)
            ),
            decisions.EntryRetried,
        )

    def replay(self, run_id: UUID, as_of: datetime | None, entry: str | None) -> history.Replay:
        return shapes.replay(self.rl.history.replay(run_id, as_of, entry_ref(entry)))

    def step(self, entry: str, upto: int | None) -> history.EntryHistory:
        """One entry's versions; with ``upto``, only that version, as the screen shows it."""
        stepping = self.rl.history.step(entry_id(entry, self.rl.answers.entries_named), upto)
        frames = stepping.frames[-1:] if upto is not None else stepping.frames
        return shapes.stepping(replace(stepping, frames=frames))

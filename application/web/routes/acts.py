"""What a person may do to a run from its page: the actions, the sentence each confirmation
says, doing it in the person's name, and the sentence that says what came of it.

An outcome travels to the page after the redirect in the session (a signed cookie): only this
module writes it, and the page shows it as text, so nothing sent can become markup."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import Depends, Request

from runledger.application.deps import AnswersDep, CleanupDep, HoldsDep, LedgerDep, RunsDep
from runledger.application.errors import Conflict
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import RunSummary
from runledger.application.reading.shapes import run_summary
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.holds import Held, Holds
from runledger.application.services.ledger import Ledger
from runledger.application.services.runs import Runs
from runledger.application.words import STATE, cleanup_word
from runledger.domain.errors import DomainError
from runledger.domain.run import ended
from runledger.domain.spec import RunSpec
from runledger.domain.text import safe_text
from runledger.domain.values import UnsafeValue

Action = Literal["advance", "cancel", "keep", "abort", "cleanup"]
LABELS: dict[str, str] = {
    "advance": "Advance",
    "cancel": "Cancel with cleanup",
    "keep": "Cancel without cleanup",
    "abort": "Abort",
    "cleanup": "Retry cleanup",
}
ENDING = ("advance", "cancel", "keep", "abort")
DONE = {"advance": "advanced", "cancel": "cancelled", "keep": "cancelled", "abort": "aborted"}


def offered(run: RunSummary) -> list[str]:
    """The actions a run's state allows: ending it while it runs, asking again once it ended."""
    if not ended(run.status):
        return list(ENDING)
    return ["cleanup"] if run.unresolved else []


def entries(count: int) -> str:
    return f"{count:,} entry" if count == 1 else f"{count:,} entries"


@dataclass(frozen=True)
class Before:
    """The run as it stands before an action: what its confirmation and outcome speak of."""

    run: RunSummary
    phases: list[str]
    phase: int
    held: tuple[Held, ...] = ()
    """Lease entries a retry would leave as they are: another live run holds their target."""

    @classmethod
    def read(cls, answers: Answers, ledger: Ledger, holds: Holds, run_id: UUID) -> Before:
        run = run_summary(answers.known_run(run_id))
        stored = ledger.get_run(run_id)
        phases = [p.id for p in RunSpec.stored(stored.spec).phases] if stored.spec else []
        over = stored.is_terminal and run.unresolved
        held = tuple(holds.of_run(run_id)) if over else ()
        return cls(run, phases, stored.phase, held)

    @property
    def name(self) -> str:
        return f"'{safe_text(self.run.name, 120)}'"

    @property
    def left(self) -> str:
        return f"{entries(self.run.unresolved)} left to give back"

    @property
    def current(self) -> str:
        return self.phases[self.phase] if self.phase < len(self.phases) else "?"


@dataclass(frozen=True)
class Foreseen:
    said: str
    possible: bool
    held: tuple[str, ...] = ()
    """Why each entry the action leaves alone is left, one sentence each."""


def foresee(before: Before, action: str, by: str) -> Foreseen:
    """Exactly what pressing the button will do, or why it can do nothing now."""
    name, left, by = before.name, before.left, safe_text(by, 120)
    if action == "cleanup":
        if not ended(before.run.status):
            return Foreseen(f"{name} is still running: its cleanup starts when it ends.", False)
        if not before.run.unresolved:
            return Foreseen(f"{name} has nothing left to give back.", False)
        if before.held:
            return _held_back(before, by)
        return Foreseen(
            f"Retry cleanup of {name}: ask the modules again for its {left}, in the name {by}.",
            True,
        )
    if ended(before.run.status):
        said = f"{name} has already ended ({before.run.status})"
        return Foreseen(f"{said}: it cannot be {DONE[action]} now.", False)
    if action == "advance":
        return _advance(before, by)
    ends = f"the run ends now, in the name {by}"
    if action == "cancel":
        said = f"Cancel {name} with cleanup: {ends}; {_giving(before, 'the runner gives back')}."
    elif action == "keep" and before.run.unresolved:
        said = (
            f"Cancel {name} without cleanup: {ends}; its {left} are kept, left in the world in "
            f"the name {by}; nothing is given back."
        )
    elif action == "keep":
        said = f"Cancel {name} without cleanup: {ends}; {_giving(before, '')}, so nothing is kept."
    else:
        said = (
            f"Abort {name}: the run ends now with the reason you give, in the name {by}; "
            f"{_giving(before, 'the runner then gives back')}."
        )
    return Foreseen(said, True)


def _held_back(before: Before, by: str) -> Foreseen:
    """A retry that leaves some lease entries alone, because another live run holds their
    target: said before anything is done."""
    said = tuple(h.said for h in before.held)
    held = len(before.held)
    asked = before.run.unresolved - held
    lease = "lease entry" if held == 1 else "lease entries"
    its = "its target" if held == 1 else "their targets"
    why = f"another live run holds {its}"
    if asked <= 0:
        return Foreseen(
            f"Retry cleanup of {before.name}: nothing would be restored now, because {why}:",
            False,
            said,
        )
    return Foreseen(
        f"Retry cleanup of {before.name}: ask the modules again for {asked:,} of its "
        f"{before.left}, in the name {by}; {held:,} {lease} will not be restored, because "
        f"{why}:",
        True,
        said,
    )


def _giving(before: Before, giving: str) -> str:
    """What becomes of the entries left to give back: ``giving`` them, or there are none."""
    if not before.run.unresolved:
        return "it has nothing left to give back so far"
    return f"{giving} its {before.left}"


def _advance(before: Before, by: str) -> Foreseen:
    name, phases, at = before.name, before.phases, before.phase
    if not phases:
        return Foreseen(f"{name} was started without a spec: it has no phases to advance.", False)
    if at + 1 < len(phases):
        return Foreseen(
            f"Advance {name}: end phase {phases[at]} and start phase {phases[at + 1]}, "
            f"in the name {by}.",
            True,
        )
    return Foreseen(
        f"Advance {name}: phase {phases[at]} is its last, so the run completes, in the name "
        f"{by}; {_giving(before, 'the runner then gives back')}.",
        True,
    )


@dataclass(frozen=True, kw_only=True)
class Doing:
    """What a run's acts use: the services that act, and what reads the run before and after."""

    answers: Answers
    runs: Runs
    ledger: Ledger
    cleanup: Cleanup
    holds: Holds

    def before(self, run_id: UUID) -> Before:
        return Before.read(self.answers, self.ledger, self.holds, run_id)


async def _doing(
    answers: AnswersDep, runs: RunsDep, ledger: LedgerDep, cleanup: CleanupDep, holds: HoldsDep
) -> Doing:
    return Doing(answers=answers, runs=runs, ledger=ledger, cleanup=cleanup, holds=holds)


DoingDep = Annotated[Doing, Depends(_doing)]
Doer = Callable[[Doing, Before, str, str], str]


def perform(doing: Doing, action: str, run_id: UUID, by: str, reason: str) -> str:
    """Do ``action`` in the name ``by``; answers what came of it.
    A refusal (a domain error, a conflict, a bad reason) is raised and nothing is written."""
    return DOERS[action](doing, doing.before(run_id), by, reason)


def _advanced(doing: Doing, before: Before, by: str, _: str) -> str:
    said = doing.runs.advance(before.run.run_id, by)
    done = f"Phase {before.current} advanced by {by}"
    if said == "completed":
        return f"{done}: it was the last, so the run completed; {_left(doing, before)}."
    after = doing.before(before.run.run_id)
    return f"{done}: phase {after.current} has started."


def _cancelled(doing: Doing, before: Before, by: str, _: str) -> str:
    doing.ledger.cancel_run(before.run.run_id, by, cleanup=True)
    return f"Cancelled by {by} with cleanup: {_left(doing, before)}."


def _kept(doing: Doing, before: Before, by: str, _: str) -> str:
    kept = doing.ledger.cancel_run(before.run.run_id, by, cleanup=False)
    return f"Cancelled by {by} without cleanup: {entries(kept)} kept in the name {by}."


def _aborted(doing: Doing, before: Before, by: str, reason: str) -> str:
    doing.ledger.abort_run(before.run.run_id, reason, by=by)
    return f"Aborted by {by} ({safe_text(reason, 200)}): {_left(doing, before)}."


def _retried(doing: Doing, before: Before, by: str, _: str) -> str:
    summary = doing.cleanup.manual_cleanup(before.run.run_id, by)
    found = doing.answers.cleanup_summary(before.run.run_id, summary)
    drifted = f", {found.drifted} drifted" if found.drifted else ""
    held = f" Left alone: {'; '.join(h.said for h in found.held)}." if found.held else ""
    cleanup = cleanup_word("ended", found.cleanup_status).said
    return (
        f"Cleanup retried by {by}: {found.reverted} {STATE['reverted'].said}, {found.failed} "
        f"{STATE['failing'].said}{drifted}; cleanup: {cleanup}"
        + (f" ({entries(found.remaining)} left)." if found.remaining else ".")
        + held
    )


def _left(doing: Doing, before: Before) -> str:
    now = doing.answers.known_run(before.run.run_id)
    if not now.unresolved:
        return "nothing is left to give back"
    return f"the runner gives back its {entries(now.unresolved)} left"


DOERS: dict[str, Doer] = {
    "advance": _advanced,
    "cancel": _cancelled,
    "keep": _kept,
    "abort": _aborted,
    "cleanup": _retried,
}


@dataclass(frozen=True)
class Outcome:
    said: str
    refused: bool = False


def refusal_code(error: Exception) -> int:
    """409 when the state of things refuses an act, 422 when what was sent is refused."""
    if isinstance(error, UnsafeValue):
        return 422
    return 409 if isinstance(error, DomainError | Conflict) else 422


def keep_outcome(request: Request, page_id: UUID, said: str) -> None:
    """The outcome for the page of ``page_id`` (a run's, or an entry's) after the redirect
    (POST, then 303, then GET)."""
    request.session["outcome"] = {"run": str(page_id), "said": safe_text(said, 1_000)}


def outcome_of(request: Request, page_id: UUID) -> Outcome | None:
    """The outcome kept for this page, shown once."""
    found: Any = request.session.pop("outcome", None)
    if isinstance(found, dict) and found.get("run") == str(page_id):
        said = found.get("said")
        return Outcome(said) if isinstance(said, str) else None
    return None

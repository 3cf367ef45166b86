"""What a person may decide about an ended run's unresolved entries from the console: keep one,
retry one, keep what is left. The sentence each confirmation says before anything is done, doing
it in the person's name, and the sentence that says what came of it (shown on the run's page)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import Entry
from runledger.application.services.decisions import Decisions
from runledger.application.services.holds import Holds
from runledger.domain.fate import UNRESOLVED
from runledger.domain.run import ended
from runledger.domain.text import safe_text
from runledger.projections.rows import EntryRow, RunRow

Act = Literal["keep", "retry", "keep_rest"]
LABELS: dict[str, str] = {
    "keep": "Keep this entry",
    "retry": "Retry this entry",
    "keep_rest": "Keep what is left",
}
YES: dict[str, str] = {
    "keep": "Yes, keep it",
    "retry": "Yes, retry it",
    "keep_rest": "Yes, keep what is left",
}


@dataclass(frozen=True)
class Asked:
    """What pressing Yes will do, or why it can do nothing now."""

    said: str
    possible: bool
    held: tuple[str, ...] = ()
    """Why the entry is left alone, when another live run holds its lease target."""


def entries(count: int) -> str:
    return f"{count:,} entry" if count == 1 else f"{count:,} entries"


def _named(run: RunRow) -> str:
    return f"'{safe_text(run.name, 120)}'"


def _refused(run: RunRow, entry: Entry | None) -> Asked | None:
    """Why nothing can be decided now, if so."""
    if not ended(run.status):
        return Asked(
            f"{_named(run)} is still running: a person decides about its entries once it has "
            "ended.",
            False,
        )
    if entry is not None and entry.state not in UNRESOLVED:
        return Asked(f"{safe_text(entry.name)} is already {entry.state}: nothing to decide.", False)
    if entry is not None and entry.claimed_by is not None:
        return Asked(
            f"{safe_text(entry.name)} is being given back by {safe_text(entry.claimed_by)} right "
            "now: decide once that attempt has answered.",
            False,
        )
    return None


def _then(run: RunRow, leaving: int) -> str:
    left = run.unresolved - leaving
    if left <= 0:
        return f"{_named(run)} then has nothing left to give back."
    return f"{_named(run)} then has {entries(left)} left to give back."


def foresee_keep(run: RunRow, entry: Entry, by: str) -> Asked:
    refused = _refused(run, entry)
    if refused is not None:
        return refused
    return Asked(
        f"Keep {safe_text(entry.name)} of {_named(run)} as it stands in the world, in the name "
        f"{safe_text(by, 120)}, with the reason you give: nothing is given back, and the entry "
        f"is no longer asked for. {_then(run, 1)}",
        True,
    )


def foresee_retry(answers: Answers, holds: Holds, run: RunRow, entry: Entry, by: str) -> Asked:
    refused = _refused(run, entry)
    if refused is not None:
        return refused
    found = answers.queries.entry(entry.entry_id)
    held = holds.among(run.run_id, [found]) if found is not None else []
    if held:
        return Asked(
            f"Retry {safe_text(entry.name)} of {_named(run)}: nothing would be restored now, "
            "because another live run holds its target:",
            False,
            tuple(h.said for h in held),
        )
    return Asked(
        f"Retry {safe_text(entry.name)} of {_named(run)}: its attempts start again from 0 and "
        f"its module is asked now to give it back (with whatever else its step left "
        f"unresolved that may be asked), in the name {safe_text(by, 120)}.",
        True,
    )


def foresee_keep_rest(run: RunRow, left: list[EntryRow], by: str) -> Asked:
    refused = _refused(run, None)
    if refused is not None:
        return refused
    if not left:
        return Asked(f"{_named(run)} has nothing left to keep.", False)
    return Asked(
        f"Keep what is left of {_named(run)}: its {entries(len(left))} left to give back stay "
        f"in the world as they stand, kept in the name {safe_text(by, 120)} with the reason you "
        f"give; nothing is given back. {_then(run, len(left))}",
        True,
    )


def keep(decider: Decisions, answers: Answers, entry_id: UUID, by: str, why: str) -> str:
    run_id = answers.known_entry(entry_id).run_id
    kept = decider.keep_one(run_id, entry_id, by, why)
    [name] = kept.entries.values()
    left = _left(answers, run_id)
    return f"Kept {safe_text(name)} in the name {by} ({safe_text(why, 200)}): {left}."


def retry(decider: Decisions, answers: Answers, entry_id: UUID, by: str, why: str) -> str:
    run_id = answers.known_entry(entry_id).run_id
    done = decider.retry_one(run_id, entry_id, by, why or None)
    name = safe_text(done.name)
    if done.retried.held:
        return f"Retry of {name} by {by}: left alone: {done.retried.held[0].said}."
    after = answers.queries.entry(entry_id)
    if after is None or after.status == "reverted":
        return f"Retried {name} by {by}: given back; {_left(answers, run_id)}."
    error = f": {safe_text(after.last_error, 300)}" if after.last_error else ""
    return f"Retried {name} by {by}: still {after.status}{error}; {_left(answers, run_id)}."


def keep_rest(decider: Decisions, answers: Answers, run_id: UUID, by: str, why: str) -> str:
    kept = decider.keep_rest(run_id, by, why)
    return (
        f"Kept what was left in the name {by} ({safe_text(why, 200)}): "
        f"{entries(len(kept.entries))} kept; {_left(answers, run_id)}."
    )


def _left(answers: Answers, run_id: UUID) -> str:
    now = answers.known_run(run_id)
    if not now.unresolved:
        return "nothing is left to give back"
    return f"{entries(now.unresolved)} left to give back"

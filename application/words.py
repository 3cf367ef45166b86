"""What a person reads for every run status, cleanup status, entry state, entry event and log
line: one word and one sign each (SPEC "One vocabulary"). The console, the CLI and the API's
descriptions all read them here; tests/entrypoints/test_one_vocabulary.py fails when one is written
again
anywhere else in the package. Every front end may import this module; it imports none of them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from runledger.application.plain import entries, value_said
from runledger.domain.text import safe_text

Tone = Literal["good", "bad", "busy", "quiet"]
SIGN: dict[str, str] = {"good": "✓", "bad": "⚠", "busy": "…", "quiet": "·"}
"""A sign beside the words, so a tone is never told by colour alone."""


@dataclass(frozen=True)
class Word:
    said: str
    tone: Tone = "quiet"
    means: str = ""
    """One sentence saying what it means: the API's descriptions and the console's titles."""

    @property
    def sign(self) -> str:
        return SIGN[self.tone]

    @property
    def signed(self) -> str:
        return f"{self.sign} {self.said}"


RUN: dict[str, Word] = {
    "running": Word("running", "busy", "its phases are under way; what it made is in use"),
    "completed": Word("completed", "quiet", "its last phase ended"),
    "cancelled": Word("cancelled", "quiet", "a person ended it"),
    "aborted": Word("aborted", "bad", "a step could not succeed, or a person aborted it"),
}

CLEANUP: dict[str, Word] = {
    "not_required": Word("nothing to give back", "quiet", "the run never ledgered anything"),
    "in_use": Word(
        "in use", "busy", "the run is running: its entries are in use by it until it ends"
    ),
    "under_way": Word(
        "giving back", "busy", "the run has ended and automatic cleanup is still at work"
    ),
    "complete": Word(
        "nothing left",
        "good",
        "the run has ended and nothing of it is left: each entry was given back, expired or kept",
    ),
    "incomplete": Word(
        "needs a person",
        "bad",
        "the run has ended, something is left and automatic cleanup will not try again",
    ),
}
"""A run's cleanup as a person reads it. The status `pending` reads as one of two: `in_use`
while the run runs, `under_way` once it has ended."""

PENDING = ("in_use", "under_way")

FILTER: dict[str, str] = {
    "not_required": CLEANUP["not_required"].said,
    "pending": f"{CLEANUP['in_use'].said} or {CLEANUP['under_way'].said}",
    "under_way": f"{CLEANUP['under_way'].said} (ended)",
    "complete": CLEANUP["complete"].said,
    "incomplete": CLEANUP["incomplete"].said,
}
"""The runs filter's choices: each cleanup status, and `under_way`, its ended half of pending."""

STATE: dict[str, Word] = {
    "placeholder": Word(
        "no answer yet", "busy", "written before its step was called; stands for what it makes"
    ),
    "live": Word("in use", "busy", "made or changed by the running run, and in use by it"),
    "failing": Word("failing", "bad", "giving it back failed; see the error and next attempt"),
    "drifted": Word("drifted", "bad", "somebody else's value stands: left alone for a person"),
    "orphaned": Word("orphaned", "bad", "found gone before its time; still asked to give back"),
    "reverted": Word("given back", "good", "given back to the world"),
    "expired": Word("expired", "good", "the world ended it at its deadline"),
    "kept": Word("kept", "quiet", "a person chose to leave it in the world"),
    "superseded": Word("replaced", "quiet", "not an entry: its step answered with what it made"),
}
"""Entry state → words, in the order a run's page lists its groups."""

LEFT = Word("not yet given back", "busy", "its run has ended; cleanup gives it back")
"""A `live` entry of a run that has ended: no longer in use, not yet given back."""

MODULE: dict[str, Word] = {
    "loaded": Word("loaded", "good", "its code is loaded and its actions registered"),
    "startup_failed": Word("failed to start", "bad", "see the reason; nothing of it is served"),
}

RUNNER: dict[str, Word] = {
    "live": Word("live", "good", "its heartbeat is recent"),
    "gone": Word("gone: no heartbeat", "bad", "it stopped beating without saying so"),
    "stopped": Word("stopped", "quiet", "it said it stopped"),
}
"""Runner state → words, in the order the runners page lists them."""

OCCURRENCE: dict[str, Word] = {
    "scheduled": Word("scheduled", "busy", "waits for its time"),
    "started": Word("started", "good", "its run was started"),
    "cancelled": Word("cancelled", "quiet", "a person cancelled it"),
}

EVENT: dict[str, str] = {
    "Recorded": "recorded",
    "Superseded": "replaced by what its step made",
    "RevertClaimed": "taken to be given back",
    "Reverted": "given back",
    "RevertFailed": "giving it back failed",
    "Drifted": "found somebody else's value: left alone",
    "Orphaned": "found gone early",
    "Expired": "expired",
    "AttemptsReset": "asked again by a person",
    "Kept": "kept",
}
"""What each of an entry's events did, in words."""

FIELD: dict[str, str] = {
    "state": "state",
    "attempts": "attempts",
    "terminal": "no more automatic attempts",
    "claim_worker": "being given back by",
    "claim_expires_at": "their turn lasts until",
    "next_attempt_at": "next attempt",
    "last_error": "error",
    "payload": "what was recorded",
    "drift_current": "value found there",
    "kept_by": "kept by",
    "note": "note",
}
"""An entry's fields, as its page names them (the stored names sit behind a toggle)."""

LOG: dict[str, Word] = {
    "run.started": Word("run started", "busy"),
    "run.phase_advanced": Word("phase advanced", "busy"),
    "run.completed": Word("run completed", "quiet"),
    "run.cancelled": Word("run cancelled", "quiet"),
    "run.aborted": Word("run aborted", "bad"),
    "step.succeeded": Word("step done", "busy"),
    "step.failed": Word("step failed", "bad"),
    "step.answered_late": Word("step answered late", "busy"),
    "cleanup.reverted": Word("given back", "good"),
    "cleanup.failed": Word("giving back failed", "bad"),
    "cleanup.drifted": Word("drifted: left alone", "bad"),
    "cleanup.swept": Word("cleanup pass", "quiet"),
    "cleanup.retry": Word("asked again", "busy"),
    "cleanup.retry_one": Word("one entry asked again", "busy"),
    "cleanup.kept": Word("kept", "quiet"),
    "cleanup.kept_one": Word("one entry kept", "quiet"),
    "cleanup.kept_rest": Word("what was left kept", "quiet"),
    "resource.expired": Word("expired", "good"),
    "resource.orphaned": Word("found gone early", "bad"),
}
"""A log line's kind → words; the kind itself stays in the JSON and behind a title."""

DETAIL: dict[str, str] = {
    "what": "action",
    "resources": "entries",
    "resource": "entry",
    "next_attempt_at": "next attempt",
    "asked_by": "asked by",
    "held": "left alone",
    "run": "run was",
}
"""A log line's detail keys that read better otherwise; the rest read as they are."""


def word(table: Mapping[str, Word], key: str) -> Word:
    """``key``'s words in ``table``; a key it lacks (a newer store) reads as itself."""
    return table.get(key) or Word(safe_text(key, 80))


def cleanup_key(run_status: str, cleanup_status: str) -> str:
    """The row of CLEANUP a run reads as: `pending` told apart by whether the run still runs."""
    if cleanup_status != "pending":
        return cleanup_status
    return "in_use" if run_status == "running" else "under_way"


def cleanup_word(run_status: str, cleanup_status: str) -> Word:
    return word(CLEANUP, cleanup_key(run_status, cleanup_status))


def state_word(state: str, running: bool = True) -> Word:
    """An entry's state; a `live` entry of an ended run is not in use any more."""
    return LEFT if state == "live" and not running else word(STATE, state)


def tally(states: Mapping[str, int], kept_by: Mapping[str, int] | None = None) -> str:
    """What became of a run's settled entries: "3 given back, 1 kept by bob"."""
    parts = [f"{states[s]:,} {STATE[s].said}" for s in ("reverted", "expired") if states.get(s)]
    if kept_by:
        parts += [f"{n:,} {STATE['kept'].said} by {who}" for who, n in sorted(kept_by.items())]
        named = sum(kept_by.values())
        if states.get("kept", 0) > named:
            parts.append(f"{states['kept'] - named:,} {STATE['kept'].said}")
    elif states.get("kept"):
        parts.append(f"{states['kept']:,} {STATE['kept'].said}")
    return ", ".join(parts)


def cleanup_detail(
    run_status: str,
    cleanup_status: str,
    total: int,
    unresolved: int,
    states: Mapping[str, int],
    kept_by: Mapping[str, int] | None = None,
) -> str:
    """The counts behind a run's cleanup words, from its rows: "3 given back, 1 kept by bob"."""
    key, settled = cleanup_key(run_status, cleanup_status), tally(states, kept_by)
    if key == "not_required":
        return ""
    if key == "complete":
        return settled or "its steps made nothing"
    if key == "in_use":
        said = f"{entries(unresolved)} {STATE['live'].said} by the run"
    else:
        said = f"{unresolved:,} of {entries(total)} left"
    return f"{said}; {settled}" if settled else said


def cleanup_said(
    run_status: str,
    cleanup_status: str,
    total: int,
    unresolved: int,
    states: Mapping[str, int],
    kept_by: Mapping[str, int] | None = None,
) -> str:
    """A run's cleanup in one line: "✓ nothing left — 3 given back, 1 kept by bob"."""
    said = cleanup_word(run_status, cleanup_status).signed
    detail = cleanup_detail(run_status, cleanup_status, total, unresolved, states, kept_by)
    return f"{said} — {detail}" if detail else said


def error_said(state: str, error: str | None) -> str | None:
    """An entry's last error: current while it is unresolved, history once it is settled."""
    if not error:
        return None
    settled = state in ("reverted", "expired", "kept", "superseded")
    return f"earlier attempt failed: {error}" if settled else error


def log_kind(kind: str) -> Word:
    return LOG.get(kind) or Word(safe_text(kind.replace("_", " ").replace(".", ": "), 80))


def detail_key(key: str) -> str:
    return DETAIL.get(key) or key.replace("_", " ")


def event_said(event: str) -> str:
    """An event's name as words: ``PhaseAdvanced`` → "phase advanced" unless EVENT says."""
    return EVENT.get(event) or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", safe_text(event, 80)).lower()


def field_said(name: str) -> str:
    return FIELD.get(name) or name.replace("_", " ")


def field_value(name: str, value: Any) -> str:
    """One of an entry's fields as a person reads it: a state in its words, the rest plainly."""
    if name == "state" and isinstance(value, str):
        return state_word(value).said
    return value_said(value)


def described(table: Mapping[str, Word], keys: tuple[str, ...] | None = None) -> str:
    """A table as an API description: "`key`: words (what it means); …"."""
    return "; ".join(
        f"`{key}`: {table[key].said} ({table[key].means})" for key in (keys or tuple(table))
    )


CLEANUP_STATUS_MEANS = (
    f"`not_required`: {CLEANUP['not_required'].said} ({CLEANUP['not_required'].means}); "
    f"`pending`: {CLEANUP['in_use'].said} ({CLEANUP['in_use'].means}) or "
    f"{CLEANUP['under_way'].said} ({CLEANUP['under_way'].means}); "
    + described(CLEANUP, ("complete", "incomplete"))
)
"""What each value of a cleanup status means, for the API's descriptions and the CLI's help."""

UNDER_WAY_MEANS = (
    "`under_way`: only runs that have ended and are still pending "
    f"({CLEANUP['under_way'].said}); `pending` also lists every running run "
    f"({CLEANUP['in_use'].said}), so a script waiting until nothing is left to give back waits "
    "on `under_way` and `incomplete`"
)

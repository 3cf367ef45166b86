"""How runs, their phases, entries and logs look in a terminal.

Every value from a module, an author or an operator goes through ``safe_text`` and into a
``rich.text.Text``; nothing here is ever parsed as markup.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from rich.console import Console
from rich.text import Text

from runledger.application import plain, words
from runledger.application.cli.log_pages import log_page
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import (
    CleanupSummary,
    Entry,
    LogPage,
    RunDetail,
    RunSummary,
)
from runledger.domain.fate import UNRESOLVED
from runledger.domain.run import ended

console = Console(highlight=False, markup=False, emoji=False)
"""The terminal every command prints to. No string printed is ever read as markup or emoji
codes: styles come from rich.text.Text only."""

LOG_LINES = 200
"""How many of a run's last log lines (and unresolved entries) a screen shows unless asked."""

TONE_STYLE = {"good": "green", "bad": "red", "busy": "yellow", "quiet": "dim"}
"""How each tone of the words (application/words.py) is coloured here; the words say it."""


Shown = tuple[RunDetail, LogPage | None]
"""A run as `log` and the demo show it: the API's run, and a page of its log (None: no log)."""


def show_runs(
    console: Console,
    answers: Answers,
    run_ids: list[UUID],
    *,
    with_log: bool,
    limit: int = LOG_LINES,
    since: datetime | None = None,
) -> None:
    """The runs, read from the store directly (the demo's screens), as `log` shows them."""
    shown = [
        (answers.run_detail(i), log_page(answers, i, limit, since) if with_log else None)
        for i in run_ids
    ]
    show_details(console, shown, limit=limit)


def show_details(console: Console, shown: list[Shown], *, limit: int = LOG_LINES) -> None:
    """Runs as the API answers them: a table, then each one's phases, log and what is left."""
    table = Table("run", "status", "cleanup", "entries", "unresolved", title="Runs")
    for detail, _ in shown:
        row = detail.run
        table.add_row(
            Text(safe_text(row.name)),
            Text(safe_text(words.word(words.RUN, row.status).said)),
            cleanup_text(row.status, row.cleanup_status),
            str(row.entries),
            str(row.unresolved),
        )
    console.print(table)
    for detail, lines in shown:
        if lines is not None:
            show_run(console, detail, lines, limit=limit)


def show_run(
    console: Console, detail: RunDetail, lines: LogPage, *, limit: int = LOG_LINES
) -> None:
    run = detail.run
    console.print(
        Text.assemble(
            "\n",
            (safe_text(run.name), "bold"),
            " ",
            (str(run.run_id), "dim"),
            f" — {safe_text(words.word(words.RUN, run.status).said)}, cleanup ",
            cleanup_text(run.status, run.cleanup_status),
            _detail(run),
        )
    )
    for phase in detail.phases:
        console.print(Text(f"  {safe_text(phase.headline)}"))
        if phase.why_not_advanced and not ended(run.status):
            console.print(
                Text.assemble(
                    "    ",
                    ("Why this phase has not advanced:", "dim"),
                    f" {safe_text(phase.why_not_advanced)}",
                )
            )
    _show_log(console, lines)
    _show_left(console, detail, limit)


def _show_log(console: Console, page: LogPage) -> None:
    earlier = page.total - len(page.lines)
    if earlier > 0:
        plural = "s" if earlier != 1 else ""
        console.print(
            Text(f"  … {earlier:,} earlier line{plural}; use --limit or --since", style="dim")
        )
    for line in page.lines:
        kind = words.log_kind(line.kind)
        console.print(
            Text.assemble(
                f"  {plain.when(line.at)} ",
                (f"{kind.said:<18}", TONE_STYLE[kind.tone]),
                f" {describe(line.detail)}",
            )
        )


def _show_left(console: Console, detail: RunDetail, limit: int) -> None:
    # The run's row already counts them, so only the entries shown are turned into lines.
    left = [e for group in detail.entries for e in group.entries if e.state in UNRESOLVED]
    entries = left[:limit]
    for entry in entries:
        console.print(Text.assemble("  ", ("left:", "red"), f" {_left(entry)}"))
    more = detail.run.unresolved - len(entries)
    if more > 0:
        entries_word = "entry" if more == 1 else "entries"
        console.print(
            Text(f"  … {more:,} more unresolved {entries_word}; use --limit", style="dim")
        )


def _left(entry: Entry) -> str:
    plural = "s" if entry.attempts != 1 else ""
    why = entry.last_error or "not yet tried"
    if entry.terminal or entry.state == "drifted":
        why = f"not retried: {why}"
    later = (
        f"; next attempt at {plain.when(entry.next_attempt_at)}" if entry.next_attempt_at else ""
    )
    state = words.state_word(entry.state, running=False).said
    return (
        f"{safe_text(entry.name)} {safe_text(state)}, "
        f"{entry.attempts} attempt{plural} — {safe_text(why)}{later}"
    )


def cleanup_text(run_status: str, cleanup_status: str) -> Text:
    """A run's cleanup in its words and sign, coloured by its tone."""
    said = words.cleanup_word(run_status, cleanup_status)
    return Text(said.signed, style=TONE_STYLE[said.tone])


def _detail(run: RunSummary) -> str:
    detail = words.cleanup_detail(
        run.status, run.cleanup_status, run.entries, run.unresolved, run.states
    )
    return f" — {detail}" if detail else ""


def describe(detail: dict[str, Any]) -> str:
    """A log line's detail as ``key=value`` pairs in words, every value made safe to show."""
    parts = []
    for key, value in detail.items():
        if isinstance(value, list):
            shown = ", ".join(safe_text(v) for v in value)
        else:
            shown = safe_text(plain.value_said(value))
        parts.append(f"{safe_text(words.detail_key(key))}={shown}")
    return "  ".join(parts)


def cleanup_words(summary: CleanupSummary) -> tuple[str | Text, ...]:
    """A cleanup summary in words, for Text.assemble: what was attempted, what came of it, and
    where the run's cleanup stands (a run asked again has ended)."""
    return (
        f"attempted {summary.attempted}, reverted {summary.reverted}, drifted "
        f"{summary.drifted}, failed {summary.failed}; {summary.remaining} remaining "
        f"(by {safe_text(summary.by)}); cleanup ",
        cleanup_text("ended", summary.cleanup_status),
    )

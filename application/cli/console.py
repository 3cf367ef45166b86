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
from runledger.application.cli.tables import Table
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import CleanupSummary
from runledger.domain.run import ended
from runledger.projections.queries import EntryRow, Queries, RunRow

console = Console(highlight=False, markup=False, emoji=False)
"""The terminal every command prints to. No string printed is ever read as markup or emoji
codes: styles come from rich.text.Text only."""

LOG_LINES = 200
"""How many of a run's last log lines (and unresolved entries) a screen shows unless asked."""

TONE_STYLE = {"good": "green", "bad": "red", "busy": "yellow", "quiet": "dim"}
"""How each tone of the words (application/words.py) is coloured here; the words say it."""


def show_runs(
    console: Console,
    answers: Answers,
    run_ids: list[UUID],
    *,
    with_log: bool,
    limit: int = LOG_LINES,
    since: datetime | None = None,
) -> None:
    rows = answers.queries.runs(run_ids, answers.clock(), answers.max_attempts)
    table = Table("run", "status", "cleanup", "entries", "unresolved", title="Runs")
    for row in rows:
        table.add_row(
            Text(safe_text(row.name)),
            Text(safe_text(words.word(words.RUN, row.status).said)),
            cleanup_text(row.status, row.cleanup_status),
            str(row.entries),
            str(row.unresolved),
        )
    console.print(table)
    if with_log:
        for row in rows:
            show_run(console, answers, row, limit=limit, since=since)


def show_run(
    console: Console,
    answers: Answers,
    run: RunRow,
    *,
    limit: int = LOG_LINES,
    since: datetime | None = None,
) -> None:
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
    try:
        phases = answers.runs.describe(run.run_id)
    except BadRequest:
        phases = []
    for phase in phases:
        console.print(Text(f"  {safe_text(phase.headline)}"))
        if phase.why_not_advanced and not ended(run.status):
            console.print(
                Text.assemble(
                    "    ",
                    ("Why this phase has not advanced:", "dim"),
                    f" {safe_text(phase.why_not_advanced)}",
                )
            )
    _show_log(console, answers.queries, run.run_id, limit, since)
    _show_left(console, answers.queries, run, limit)


def _show_log(
    console: Console, queries: Queries, run_id: UUID, limit: int, since: datetime | None
) -> None:
    lines = queries.log(run_id, limit=limit, since=since)
    earlier = queries.log_size(run_id) - len(lines)
    if earlier > 0:
        plural = "s" if earlier != 1 else ""
        console.print(
            Text(f"  … {earlier:,} earlier line{plural}; use --limit or --since", style="dim")
        )
    for line in lines:
        kind = words.log_kind(line.kind)
        console.print(
            Text.assemble(
                f"  {plain.when(line.at)} ",
                (f"{kind.said:<18}", TONE_STYLE[kind.tone]),
                f" {describe(line.detail)}",
            )
        )


def _show_left(console: Console, queries: Queries, run: RunRow, limit: int) -> None:
    # The runs row already counts them, so only the entries shown are turned into lines.
    entries = queries.unresolved_entries(run.run_id)[:limit]
    for entry in entries:
        console.print(Text.assemble("  ", ("left:", "red"), f" {_left(entry)}"))
    more = run.unresolved - len(entries)
    if more > 0:
        entries_word = "entry" if more == 1 else "entries"
        console.print(
            Text(f"  … {more:,} more unresolved {entries_word}; use --limit", style="dim")
        )


def _left(entry: EntryRow) -> str:
    plural = "s" if entry.attempts != 1 else ""
    why = entry.last_error or "not yet tried"
    if entry.terminal or entry.status == "drifted":
        why = f"not retried: {why}"
    later = f"; next attempt at {plain.when(entry.next_attempt)}" if entry.next_attempt else ""
    state = words.state_word(entry.status, running=False).said
    return (
        f"{safe_text(entry.name)} {safe_text(state)}, "
        f"{entry.attempts} attempt{plural} — {safe_text(why)}{later}"
    )


def cleanup_text(run_status: str, cleanup_status: str) -> Text:
    """A run's cleanup in its words and sign, coloured by its tone."""
    said = words.cleanup_word(run_status, cleanup_status)
    return Text(said.signed, style=TONE_STYLE[said.tone])


def _detail(run: RunRow) -> str:
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

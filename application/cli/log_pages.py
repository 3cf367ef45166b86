"""A run's log as `log` shows it from the store directly: its last lines since a time."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from runledger.application.reading import shapes
from runledger.application.reading.answers import Answers
from runledger.application.reading.schemas.runs import LogPage


def log_page(answers: Answers, run_id: UUID, limit: int, since: datetime | None) -> LogPage:
    """The lines a screen shows, as the API's page of them: ``earlier`` is there when lines
    before these exist (whether ``since`` or ``limit`` left them out)."""
    answers.known_run(run_id)
    lines = answers.queries.log(run_id, limit=limit, since=since)
    total = answers.queries.log_size(run_id)
    return LogPage(
        run_id=run_id,
        lines=[shapes.log_line(line) for line in lines],
        total=total,
        earlier=lines[0].position if lines and total > len(lines) else None,
    )

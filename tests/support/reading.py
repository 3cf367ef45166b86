"""Reading what a test just did: the projections caught up first, and a few shorthands."""

from __future__ import annotations

import os
from uuid import UUID

from runledger.application.runledger import Runledger
from runledger.application.services.running.runner import TickReport
from runledger.domain.step import Step
from runledger.projections.queries import EntryRow, LogLine, RunRow

EVERY_VIEW = (
    "runs",
    "resources",
    "steps",
    "run_log",
    "runners",
    "tokens",
    "definitions",
    "occurrences",
    "deliveries",
)
"""Every projection, in the projector's order: a test naming them all names them here, so a new
view is added to every such test at once, on purpose."""


def written(rl: Runledger) -> int:
    """The store's head: a write that was refused leaves it where it was."""
    return rl.app.recorder.max_notification_id() or 0


def row(rl: Runledger, run: UUID) -> RunRow:
    rl.projector.catch_up()
    found = rl.queries.run(run, rl.clock(), rl.settings.max_revert_attempts)
    assert found is not None
    return found


def status(rl: Runledger, run: UUID) -> str:
    return row(rl, run).cleanup_status


def entry(rl: Runledger, entry_id: UUID) -> EntryRow:
    rl.projector.catch_up()
    found = rl.queries.entry(entry_id)
    assert found is not None
    return found


def lines(rl: Runledger, run: UUID, kind: str) -> list[LogLine]:
    rl.projector.catch_up()
    return [line for line in rl.queries.log(run) if line.kind == kind]


def tick(rl: Runledger, times: int = 1) -> TickReport:
    runner = rl.runner("w1")
    report = runner.tick()
    for _ in range(times - 1):
        report = runner.tick()
    return report


def the_step(rl: Runledger, run: UUID, step_id: str) -> Step:
    key = Step.create_id(run, step_id)
    return rl.runs.streams.load(Step, [key])[key]


def wall() -> float:
    """Seconds on the real clock: freezegun stops time.monotonic, not os.times."""
    return os.times().elapsed

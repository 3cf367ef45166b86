"""The steps view: one row per step of a run, its state, attempts and claim."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from runledger.domain.step import Step, gives_up
from runledger.projections.views.base import Row, RowView, epoch, require


@singledispatch
def apply_step(event: Any, row: Row | None) -> Row:
    raise TypeError(f"the steps view does not know {type(event).__name__}")


@apply_step.register
def _(event: Step.Planned, row: Row | None) -> Row:
    return {
        "step_key": str(event.originator_id),
        "run_id": str(event.run_id),
        "step_id": event.step_id,
        "phase": event.phase,
        "action": event.action,
        "state": "waiting",
        "attempts": 0,
        "claim_worker": None,
        "claim_expires": None,
        "last_error": None,
        "done_at": None,
        "version": event.originator_version,
    }


@apply_step.register
def _(event: Step.DispatchClaimed, row: Row | None) -> Row:
    return require(row, event) | {
        "attempts": event.attempt,
        "claim_worker": event.worker,
        "claim_expires": epoch(event.expires_at),
        "version": event.originator_version,
    }


@apply_step.register
def _(event: Step.Succeeded, row: Row | None) -> Row:
    return require(row, event) | {
        "state": "done",
        "done_at": epoch(event.at),
        "claim_worker": None,
        "claim_expires": None,
        "version": event.originator_version,
    }


@apply_step.register
def _(event: Step.Failed, row: Row | None) -> Row:
    return require(row, event) | {
        "state": "gave_up" if gives_up(event.attempt, event.final) else "waiting",
        "last_error": event.error,
        "claim_worker": None,
        "claim_expires": None,
        "version": event.originator_version,
    }


class StepsView(RowView):
    name = "steps"
    table = "rl_steps"
    key = "step_key"
    columns = (
        "step_key",
        "run_id",
        "step_id",
        "phase",
        "action",
        "state",
        "attempts",
        "claim_worker",
        "claim_expires",
        "last_error",
        "done_at",
        "version",
    )
    events = (Step.Planned, Step.DispatchClaimed, Step.Succeeded, Step.Failed)
    apply = apply_step

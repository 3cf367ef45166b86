"""Cleanup after an outage: a plan that writes nothing, then applying exactly that plan."""

from __future__ import annotations

from fastapi import APIRouter, Response

from runledger.application.api.deps import Operator, Viewer
from runledger.application.api.once import Once
from runledger.application.api.responses import ACTING, AUTHENTICATED
from runledger.application.deps import AnswersDep, BulkDep
from runledger.application.reading import shapes
from runledger.application.reading.schemas import bulk

router = APIRouter(
    prefix="/admin/events/cleanup", tags=["cleanup"], responses=AUTHENTICATED | ACTING
)


@router.post("/plan", response_model=bulk.Plan)
def plan_cleanup(selection: BulkDep, _: Viewer, where: bulk.Selector) -> bulk.Plan:
    """Which ended runs and unresolved entries the filter selects, and what each would be
    asked. Writes nothing."""
    return shapes.plan(where, selection.plan(shapes.where(where)))


@router.post("/apply", response_model=bulk.Applied)
def apply_cleanup(
    selection: BulkDep, answers: AnswersDep, actor: Operator, once: Once, body: bulk.Apply
) -> bulk.Applied | Response:
    """Retry exactly the runs of the plan named by its fingerprint, in the caller's name;
    409 when the selection has changed since."""
    return once(
        lambda: selection.apply(shapes.where(body.where), body.fingerprint, actor.name),
        lambda done: bulk.Applied(
            fingerprint=body.fingerprint,
            runs=[answers.cleanup_summary(run_id, s) for run_id, s in done.items()],
        ),
    )

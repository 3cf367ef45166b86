"""Cleanup after an outage: a plan that writes nothing, then applying exactly that plan."""

from __future__ import annotations

from fastapi import APIRouter, Response

from runledger.application.api.deps import Operator, Viewer
from runledger.application.api.once import Once
from runledger.application.api.responses import ACTING, AUTHENTICATED
from runledger.application.deps import Rl
from runledger.application.reading import answers as reading
from runledger.application.reading.schemas import bulk

router = APIRouter(
    prefix="/admin/events/cleanup", tags=["cleanup"], responses=AUTHENTICATED | ACTING
)


@router.post("/plan", response_model=bulk.Plan)
def plan_cleanup(rl: Rl, _: Viewer, where: bulk.Selector) -> bulk.Plan:
    """Which ended runs and unresolved entries the filter selects, and what each would be
    asked. Writes nothing."""
    return reading.plan(where, rl.bulk.plan(reading.where(where)))


@router.post("/apply", response_model=bulk.Applied)
def apply_cleanup(rl: Rl, actor: Operator, once: Once, body: bulk.Apply) -> bulk.Applied | Response:
    """Retry exactly the runs of the plan named by its fingerprint, in the caller's name;
    409 when the selection has changed since."""
    return once(
        lambda: rl.bulk.apply(reading.where(body.where), body.fingerprint, actor.name),
        lambda done: bulk.Applied(
            fingerprint=body.fingerprint,
            runs=[reading.cleanup_summary(rl, run_id, s) for run_id, s in done.items()],
        ),
    )

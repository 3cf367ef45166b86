"""A person decides about an ended run's unresolved entries: keep one with a reason, keep what
is left, or retry one alone. Operators only; each is in the caller's name and logged, and takes
an Idempotency-Key as every act does."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Response

from runledger.application.api.deps import Operator
from runledger.application.api.once import Once
from runledger.application.api.responses import ABOUT_ONE, ACTING, AUTHENTICATED
from runledger.application.deps import AnswersDep, DecisionsDep
from runledger.application.reading import decided
from runledger.application.reading.schemas import decisions

router = APIRouter(
    prefix="/admin/events/runs", tags=["runs"], responses=AUTHENTICATED | ABOUT_ONE | ACTING
)


@router.post("/{run_id}/entries/{entry_id}/keep", response_model=decisions.Kept)
def keep_entry(
    decider: DecisionsDep,
    answers: AnswersDep,
    actor: Operator,
    once: Once,
    run_id: UUID,
    entry_id: UUID,
    body: decisions.Keep,
) -> decisions.Kept | Response:
    """Accept one unresolved entry of an ended run as it stands in the world, with a reason,
    in the caller's name; 409 while the run is running or once the entry is resolved."""
    answers.known_run(run_id)
    return once(
        lambda: decider.keep_one(run_id, entry_id, actor.name, body.reason),
        lambda found: decided.kept(answers, found),
    )


@router.post("/{run_id}/entries/{entry_id}/retry", response_model=decisions.EntryRetried)
def retry_entry(
    decider: DecisionsDep,
    answers: AnswersDep,
    actor: Operator,
    once: Once,
    run_id: UUID,
    entry_id: UUID,
    body: decisions.Retry | None = None,
) -> decisions.EntryRetried | Response:
    """Ask again for one unresolved entry of an ended run: reset its attempts and work its
    group now, in the caller's name. A lease entry whose target another live run holds is left
    as it is, and `held` says why."""
    answers.known_run(run_id)
    why = None if body is None else body.reason
    return once(
        lambda: decider.retry_one(run_id, entry_id, actor.name, why),
        lambda found: decided.retried(answers, found),
    )


@router.post("/{run_id}/keep", response_model=decisions.Kept)
def keep_rest(
    decider: DecisionsDep,
    answers: AnswersDep,
    actor: Operator,
    once: Once,
    run_id: UUID,
    body: decisions.Keep,
) -> decisions.Kept | Response:
    """Keep what is left: accept every unresolved entry of an ended run as it stands, with one
    reason, in the caller's name."""
    answers.known_run(run_id)
    return once(
        lambda: decider.keep_rest(run_id, actor.name, body.reason),
        lambda found: decided.kept(answers, found),
    )

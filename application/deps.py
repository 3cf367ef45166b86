"""What a route of either HTTP front end (the API, the console) may ask for: one typed alias per
service, so that a route's signature says what it uses; none hands out the composition root.

Requests write at once, as other processes do: no service keeps one call's state on itself, and
the store refuses a stale save (a 409, api/errors.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, TypeVar

from fastapi import Depends, Request

from runledger.application.brake import Brake
from runledger.application.reading.answers import Answers
from runledger.application.reading.fleet import FleetAnswers
from runledger.application.runledger import Runledger
from runledger.application.services.bulk import Bulk
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.decisions import Decisions
from runledger.application.services.definitions import Definitions
from runledger.application.services.history import History
from runledger.application.services.holds import Holds
from runledger.application.services.ledger import Ledger
from runledger.application.services.occurrences import Occurrences
from runledger.application.services.once import Once
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.runs import Runs
from runledger.application.services.tokens import Tokens
from runledger.application.services.webhooks import Webhooks
from runledger.application.settings import Settings
from runledger.projections.read_model import ReadModel


def _root(request: Request) -> Runledger:
    rl: Runledger = request.app.state.rl
    return rl


T = TypeVar("T")


def _of(part: Callable[[Runledger], T]) -> Callable[[Request], Awaitable[T]]:
    # async: a part of the root is an attribute read, made on the event loop; a plain def
    # would be sent to the thread pool and back, once per alias a route names (measured in
    # scripts/MEASUREMENTS.md, "Dependencies on the event loop").
    async def get(request: Request) -> T:
        return part(_root(request))

    return get


AnswersDep = Annotated[Answers, Depends(_of(lambda rl: rl.answers))]
FleetAnswersDep = Annotated[FleetAnswers, Depends(_of(lambda rl: rl.fleet_answers))]
Now = Annotated[datetime, Depends(_of(lambda rl: rl.clock()))]
"""The moment the request is served, on the runledger's clock."""

SettingsDep = Annotated[Settings, Depends(_of(lambda rl: rl.settings))]
RunsDep = Annotated[Runs, Depends(_of(lambda rl: rl.runs))]
LedgerDep = Annotated[Ledger, Depends(_of(lambda rl: rl.ledger))]
CleanupDep = Annotated[Cleanup, Depends(_of(lambda rl: rl.cleanup))]
DecisionsDep = Annotated[Decisions, Depends(_of(lambda rl: rl.decisions))]
HoldsDep = Annotated[Holds, Depends(_of(lambda rl: rl.holds))]
ReconcilerDep = Annotated[Reconciler, Depends(_of(lambda rl: rl.reconciler))]
HistoryDep = Annotated[History, Depends(_of(lambda rl: rl.history))]
BulkDep = Annotated[Bulk, Depends(_of(lambda rl: rl.bulk))]
DefinitionsDep = Annotated[Definitions, Depends(_of(lambda rl: rl.definitions))]
OccurrencesDep = Annotated[Occurrences, Depends(_of(lambda rl: rl.occurrences))]
TokensDep = Annotated[Tokens, Depends(_of(lambda rl: rl.tokens))]
WebhooksDep = Annotated[Webhooks, Depends(_of(lambda rl: rl.webhooks))]
OnceDep = Annotated[Once, Depends(_of(lambda rl: rl.once))]
ProjectorDep = Annotated[ReadModel, Depends(_of(lambda rl: rl.projector))]
BrakeDep = Annotated[Brake, Depends(_of(lambda rl: rl.brake))]
"""The process's brake on wrong tokens and passwords."""

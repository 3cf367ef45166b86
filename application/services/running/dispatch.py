from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Literal
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.modules.answers import PerformDone, PerformFailed, parse_perform
from runledger.application.modules.deadline import (
    CallObserver,
    Late,
    Outcome,
    call_with_deadline,
    unobserved,
)
from runledger.application.modules.protocol import Action, Registry
from runledger.application.services.leases import CORE_LEASE, CoreLease
from runledger.application.services.ledger import Ledger
from runledger.application.services.retry_at import retry_at
from runledger.application.services.serving import ServedElsewhere, nowhere, unserved
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.step import MAX_STEP_ATTEMPTS, Step

Dispatched = Literal["succeeded", "failed", "not_mine"]
log = logging.getLogger("runledger.dispatch")


class Dispatcher:
    """One attempt at one step: claim it, record before confirm, perform it under its deadline,
    and save what came of it. A step whose action this process has not loaded is left to a live
    runner that serves it; with none, the attempt fails without a call and waits its back-off."""

    def __init__(
        self,
        *,
        app: LedgerApp,
        ledger: Ledger,
        registry: Registry,
        core_lease: CoreLease,
        settings: Settings,
        clock: Callable[[], datetime],
        observe: CallObserver = unobserved,
    ) -> None:
        self.observe = observe
        self.app = app
        self.ledger = ledger
        self.registry = registry
        self.core_lease = core_lease
        self.settings = settings
        self.clock = clock

    def dispatch(
        self, run_id: UUID, step: Step, worker: str, elsewhere: ServedElsewhere = nowhere
    ) -> Dispatched:
        """Dispatch one due step; ``elsewhere`` says what other live runners serve (a step whose
        action this runner lacks is theirs then)."""
        action = self._action(step)
        if action is None or action.perform is None:
            need = self.needs(step)
            if elsewhere(need):
                return "not_mine"
            final = step.attempts + 1 >= MAX_STEP_ATTEMPTS
            error = f'no module registers "{need}"' if final else unserved(need)
            return self._unanswered(step, worker, PerformFailed(error, final=final))
        now = self.clock()
        budget_ms = action.budget_ms or self.settings.default_budget_ms
        step.claim_dispatch(
            worker,
            now,
            now + timedelta(milliseconds=budget_ms, seconds=self.settings.claim_slack_s),
        )
        try:
            self.app.save(step)
        except IntegrityError:
            return "not_mine"  # another runner took it
        # Record before confirm: the placeholder stands before the world is touched.
        placeholder = self.ledger.record_placeholder(
            run_id, step.step_id, self._owner(step, action), step.action, step.idempotency_key
        )
        started = time.perf_counter()
        outcome = call_with_deadline(
            action.perform,
            {"params": step.params, "idempotency_key": step.idempotency_key, "run_id": str(run_id)},
            budget_ms / 1000,
            late=self._late(placeholder, step),
            what=f"{step.action} for {step.idempotency_key}",
        )
        answer = parse_perform(outcome, step.action)
        done = "ok" if isinstance(answer, PerformDone) else "failed"
        self.observe(step.action, done, time.perf_counter() - started)
        if isinstance(answer, PerformDone):
            step.succeed(worker, len(answer.resources), self.clock())
            self.ledger.supersede(placeholder, answer.resources, also=[step])
            return "succeeded"
        self._fail(step, worker, answer)
        self.app.save(step)
        return "failed"

    def _late(self, placeholder: UUID, step: Step) -> Late:
        """What an answer that comes after the deadline is worth: the resources it names are
        ledgered on the step's run, however far it has moved on (ended, given back), so the
        sweep gives them back. Nothing else is decided: the step's own attempt has failed."""
        action, step_id = step.action, step.step_id

        def judge(outcome: Outcome) -> None:
            answer = parse_perform(outcome, action)
            if isinstance(answer, PerformDone) and answer.resources:
                self.ledger.record_late(placeholder, answer.resources, step=step_id, action=action)
                log.warning(
                    "%s for step %s answered after its deadline: %d resource(s) ledgered",
                    action,
                    step_id,
                    len(answer.resources),
                )

        return judge

    def needs(self, step: Step) -> str:
        """What dispatching the step needs loaded: its action, or for core.lease its lease."""
        return str(step.params.get("lease")) if step.action == CORE_LEASE else step.action

    def _action(self, step: Step) -> Action | None:
        """What performs the step in this process, or None when it has not loaded it."""
        if step.action == CORE_LEASE:
            return self.core_lease.action if self.needs(step) in self.registry.leases else None
        action = self.registry.action(step.action)
        return action if action is not None and action.perform is not None else None

    def _unanswered(self, step: Step, worker: str, failure: PerformFailed) -> Dispatched:
        """An attempt that made no call: claimed and failed in one save."""
        now = self.clock()
        step.claim_dispatch(worker, now, now)
        self._fail(step, worker, failure)
        try:
            self.app.save(step)
        except IntegrityError:
            return "not_mine"  # another runner moved it first
        return "failed"

    def _fail(self, step: Step, worker: str, failure: PerformFailed) -> None:
        now = self.clock()
        later = retry_at(self.settings.backoff, step.attempts, MAX_STEP_ATTEMPTS, now)
        step.fail(worker, failure.error, now, final=failure.final, next_attempt_at=later)

    def _owner(self, step: Step, action: Action) -> str:
        """The module an entry belongs to: for a lease, the module that registers the lease."""
        if step.action == CORE_LEASE:
            lease = self.registry.leases.get(self.needs(step))
            return lease.module if lease else "core"
        return action.module

from __future__ import annotations

import time
from datetime import timedelta

from runledger.application.modules.answers import Verdict, classify_restore, classify_revert
from runledger.application.modules.deadline import CallObserver, call_with_deadline, unobserved
from runledger.application.modules.protocol import Registry
from runledger.application.services.leases import CORE_LEASE, CoreLease
from runledger.application.services.serving import unserved
from runledger.application.services.sweep.groups import Group
from runledger.application.settings import Settings
from runledger.domain.resource import PLACEHOLDER_KIND


class GiveBack:
    """One call that gives a group back through its module, under the call's deadline, and the
    verdict its answer is worth. Nothing here writes to the ledger."""

    def __init__(
        self,
        *,
        registry: Registry,
        core_lease: CoreLease,
        settings: Settings,
        observe: CallObserver = unobserved,
    ) -> None:
        self.registry = registry
        self.core_lease = core_lease
        self.settings = settings
        self.observe = observe

    def budget(self, group: Group) -> timedelta:
        action = None if group.is_lease else self.registry.action(group.head.action)
        budget = action.budget_ms if action and action.budget_ms else None
        return timedelta(milliseconds=budget or self.settings.default_budget_ms)

    def served_here(self, group: Group) -> bool:
        """Whether this process has loaded what the group's call needs."""
        head = group.head
        if group.is_lease:
            return self.registry.lease_for_ref(head.ref) is not None
        if head.action == CORE_LEASE:
            return True  # core's own: a lease it names is checked by the call
        return self.registry.action(head.action) is not None

    def needs(self, group: Group) -> str:
        """What the call needs, as a person names it: an action id or a lease id."""
        head = group.head
        return head.ref.partition("#")[0] if group.is_lease else (head.action or "")

    def verdict(self, group: Group) -> Verdict:
        """The call's verdict; or, for what this process has not loaded (and no live runner
        serves, or the group would have been left to it), a retry spaced by the back-off, so a
        runner restarting for a minute costs nothing, until the attempts run out."""
        if self.served_here(group):
            started = time.perf_counter()
            verdict = self.call(group)
            self.observe(self.needs(group), verdict.outcome, time.perf_counter() - started)
            return verdict
        need = self.needs(group)
        attempt = max(e.attempts for e in group.claimed.values())
        if attempt < self.settings.max_revert_attempts:
            return Verdict("retry", unserved(need))
        return Verdict(
            "terminal", f'no module registers "{need}", so its resources cannot be given back'
        )

    def call(self, group: Group) -> Verdict:
        seconds = self.budget(group).total_seconds()
        head = group.head
        if group.is_lease:
            found = self.registry.lease_for_ref(head.ref)
            if found is None:
                return Verdict("terminal", f'no module registers the lease "{head.ref}"')
            lease, target = found
            payload = head.payload or {}
            outcome = call_with_deadline(
                lease.restore,
                {
                    "baseline": payload.get("baseline"),
                    "expected": payload.get("applied"),
                    "run_id": str(head.run_id),
                    "target": target,
                    "idempotency_key": head.idempotency_key,
                },
                seconds,
                what=f"{head.ref} restore for {head.idempotency_key}",
            )
            return classify_restore(outcome, head.ref, payload.get("baseline"))
        if not head.action:
            return Verdict("terminal", "nothing records which action created this")
        if head.action == CORE_LEASE and head.kind == PLACEHOLDER_KIND:
            return self.core_lease.give_back_unanswered(
                head.run_id, head.step, head.idempotency_key, seconds
            )
        action = self.registry.action(head.action)
        if action is None:
            return Verdict(
                "terminal",
                f'no module registers "{head.action}", so its resources cannot be given back',
            )
        if action.revert is None:
            return Verdict("terminal", f"{head.action} declares no revert()")
        resources = [
            {"kind": r.kind, "ref": r.ref, "payload": r.payload, "member_key": r.member_key}
            for r in group.rows
            if r.entry_id in group.claimed and r.kind != PLACEHOLDER_KIND
        ]
        outcome = call_with_deadline(
            action.revert,
            {
                "resources": resources,
                "idempotency_key": head.idempotency_key,
                "run_id": str(head.run_id),
            },
            seconds,
            what=f"{head.action} revert for {head.idempotency_key}",
        )
        return classify_revert(outcome, head.action)

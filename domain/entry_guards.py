"""What a ledger entry refuses, and why: the checks ``Resource``'s commands make before any
event, each raising the domain error that names the entry and the rule it fails."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from runledger.domain.errors import AlreadyResolved, NotAPlaceholder, NotClaimable, NotClaimHolder

if TYPE_CHECKING:
    from runledger.domain.resource import Resource


def require_open_placeholder(entry: Resource) -> None:
    if not entry.is_placeholder or not entry.unresolved:
        raise NotAPlaceholder(f"{_name(entry)} is {entry.state}, not a placeholder")


def require_retryable(entry: Resource, now: datetime, max_attempts: int) -> None:
    if not entry.retryable(now, max_attempts):
        why = entry.fate.why_not_retryable(now, max_attempts)
        raise NotClaimable(f"{_name(entry)} {why}")


def require_holder(entry: Resource, worker: str, attempt: int) -> None:
    """Only the worker that claimed this attempt, while it stands, says how it went."""
    if entry.claim_worker != worker or entry.attempts != attempt or not entry.unresolved:
        raise NotClaimHolder(f"{_name(entry)}: {worker} does not hold attempt {attempt}")


def require_unresolved(entry: Resource) -> None:
    if not entry.unresolved:
        raise AlreadyResolved(f"{_name(entry)} is already {entry.state}")


def require_named_and_unresolved(entry: Resource) -> None:
    require_unresolved(entry)
    if entry.is_placeholder:
        raise NotAPlaceholder(f"{entry.ref} is a placeholder, not a named resource")


def require_no_call_out(entry: Resource, now: datetime) -> None:
    """A worker's call out on the entry answers what the world now holds: wait for it."""
    if entry.under_live_claim(now):
        raise NotClaimable(
            f"{_name(entry)} is being given back by {entry.claim_worker} until "
            f"{entry.claim_expires_at}; keep it once that attempt has answered"
        )


def _name(entry: Resource) -> str:
    return f"{entry.kind}:{entry.ref}"

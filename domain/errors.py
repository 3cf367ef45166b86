from __future__ import annotations


class DomainError(Exception):
    """A command that the aggregate's current state does not allow."""


class NotClaimable(DomainError):
    """The entry cannot be claimed for a revert attempt now."""


class NotClaimHolder(DomainError):
    """A verdict from a worker that does not hold the entry's current claim."""


class AlreadyResolved(DomainError):
    """The entry is already resolved; nothing is owed."""


class NotAPlaceholder(DomainError):
    """Only a placeholder can be superseded."""


class RunNotRunning(DomainError):
    """The run has already ended."""


class PhaseOutOfOrder(DomainError):
    """A phase can only advance to the next one."""


class KeyGivenBack(RunNotRunning):
    """The step's idempotency key was given back: nothing is dispatched under it again."""

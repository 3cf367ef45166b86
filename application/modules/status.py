"""What loading one module came to: loaded, or startup_failed with the reason why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runledger.application.modules.deadline import Outcome, Raised, TimedOut


@dataclass
class ModuleStatus:
    folder: str
    name: str | None
    site: str | None
    status: Literal["loaded", "startup_failed"]
    reason: str | None = None
    actions: list[str] = field(default_factory=list)
    leases: list[str] = field(default_factory=list)


class ModuleFailed(Exception):
    """One module could not start; its reason is this exception's message."""


def failure(what: str, outcome: Outcome) -> str:
    """The reason a call into a module's code (``what``) gives for its module not starting."""
    if isinstance(outcome, TimedOut):
        how = (
            " and was stopped"
            if outcome.stopped
            else "; it could not be stopped and was left running"
        )
        return f"{what} did not finish within {outcome.seconds:g}s{how}"
    if isinstance(outcome, Raised):
        error = outcome.error
        return str(error) if isinstance(error, ModuleFailed) else f"{what} raised {outcome.message}"
    return f"{what} answered something core cannot use"

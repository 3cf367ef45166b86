"""The time a module's own code is given: its import, its ``register()`` and its closers each run
in a watched thread within a budget, and one that overruns is left behind, never waited on."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from runledger.application.modules.deadline import Raised, Returned, TimedOut, call_with_deadline
from runledger.application.modules.entry import import_entry
from runledger.application.modules.host import ModuleContext, Registration
from runledger.application.modules.manifest import Manifest
from runledger.application.modules.status import ModuleFailed, failure
from runledger.application.modules.threads import watching

log = logging.getLogger("runledger.loader")


def import_register(folder: Path, manifest: Manifest, budget_s: float) -> Any:
    """The module's register function, imported within ``budget_s``."""
    with watching(manifest.name):
        imported = call_with_deadline(
            import_entry,
            {"folder": folder, "manifest": manifest},
            budget_s,
            raw=True,
            stop=True,
            name=f"module-import-{manifest.name}",
        )
    if isinstance(imported, TimedOut | Raised):
        raise ModuleFailed(failure("importing it", imported))
    if not isinstance(imported, Returned):
        raise ModuleFailed("importing it answered no register function")
    return imported.value


def call_register(
    register: Any, name: str, context: ModuleContext, registration: Registration, budget_s: float
) -> None:
    """``register(ctx)`` within ``budget_s``; the registration closes however it ended."""
    with watching(name):
        outcome = call_with_deadline(
            register,
            {"ctx": context},
            budget_s,
            raw=True,
            stop=True,
            name=f"module-register-{name}",
        )
    registration.close()
    if isinstance(outcome, TimedOut | Raised):
        raise ModuleFailed(failure("register()", outcome))


def run_closers(name: str, registration: Registration, deadline: float) -> None:
    """A closer that hangs or raises is logged and passed over (a hung one is abandoned in
    its daemon thread): closing never waits on a module past the deadline."""
    for closer in registration.closers:
        budget = max(0.05, deadline - time.monotonic())
        with watching(name):
            outcome = call_with_deadline(closer, {}, budget, raw=True, name=f"module-close-{name}")
        if isinstance(outcome, TimedOut):
            log.warning("closing module %s: a closer did not finish and was left behind", name)
        elif isinstance(outcome, Raised):
            log.warning("closing module %s: a closer raised %s", name, outcome.message)

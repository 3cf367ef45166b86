"""Loading the configured modules into a runledger just built: the builtins named by
RUNLEDGER_BUILTIN_MODULES, then the folder of RUNLEDGER_MODULES_DIR, each module's events
(orphans, expiries) wired to the reconciler."""

from __future__ import annotations

from pathlib import Path

from runledger.application.modules.loader import Loader, ModuleEvents
from runledger.application.runledger import Runledger


def load_modules(rl: Runledger) -> None:
    settings = rl.settings

    def events(module: str) -> ModuleEvents:
        return ModuleEvents(module, rl.reconciler.reconcile_module, rl.reconciler.expire)

    loader = Loader(
        rl.registry,
        events,
        settings.module_settings,
        register_budget_s=settings.module_load_budget_s,
        environ=settings.module_environ,
    )
    statuses = loader.load_builtins(settings.builtin_names())
    if settings.modules_dir:
        statuses += loader.load([Path(settings.modules_dir)])
    rl.modules = statuses
    rl.loader = loader

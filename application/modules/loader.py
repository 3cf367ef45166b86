"""Loading modules from folders: one module per site, decided before any module code runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runledger.application.modules.admission import check_name, module_settings
from runledger.application.modules.budgets import call_register, import_register, run_closers
from runledger.application.modules.host import ModuleContext, ModuleEvents, Registration
from runledger.application.modules.manifest import Manifest, check_api, read_manifest
from runledger.application.modules.protocol import Registry
from runledger.application.modules.status import ModuleFailed, ModuleStatus

__all__ = ["Loader", "ModuleContext", "ModuleEvents", "ModuleStatus", "folders"]

BUILTIN_DIR = Path(__file__).parent.parent / "builtin_modules"


def folders(dirs: Iterable[Path]) -> list[Path]:
    """Every module folder, in name order."""
    found = [child for d in dirs if d.is_dir() for child in d.iterdir() if child.is_dir()]
    return sorted(found, key=lambda p: (p.name, str(p)))


@dataclass
class Hosted:
    """A loaded module as core keeps it: the name core decided, what to call when closing."""

    name: str
    context: ModuleContext
    registration: Registration


class Loader:
    """Loads module folders into one registry. A failure is a module's status, never a crash.

    ``settings`` are the ``RUNLEDGER_*`` settings and ``environ`` the rest of the environment;
    each module is given only its own part of them (``module_scope``).
    """

    def __init__(
        self,
        registry: Registry,
        events: Callable[[str], ModuleEvents],
        settings: Mapping[str, str],
        register_budget_s: float = 10.0,
        environ: Mapping[str, str] | None = None,
        close_budget_s: float = 2.0,
    ) -> None:
        self.registry = registry
        self.events = events
        self.settings = settings
        self.environ = environ or {}
        self.register_budget_s = register_budget_s
        self.close_budget_s = close_budget_s
        self.sites: dict[str, str] = {}
        self.hosted: list[Hosted] = []

    def load(self, dirs: Iterable[Path]) -> list[ModuleStatus]:
        dirs = list(dirs)
        missing = [
            ModuleStatus(str(d), None, None, "startup_failed", "the modules folder does not exist")
            for d in dirs
            if not d.is_dir()
        ]
        return missing + [self.load_folder(folder) for folder in folders(dirs)]

    def load_builtins(self, names: Iterable[str]) -> list[ModuleStatus]:
        """The built-in modules by name; a name no built-in module has is a module that failed
        to start, saying so, rather than one silently left out."""
        known = sorted(p.name for p in BUILTIN_DIR.iterdir() if (p / "module.toml").is_file())
        return [
            self.load_folder(BUILTIN_DIR / name)
            if name in known
            else ModuleStatus(
                name,
                None,
                None,
                "startup_failed",
                f"RUNLEDGER_BUILTIN_MODULES names {name!r}, which is no built-in module "
                f"(there are {', '.join(known)})",
            )
            for name in names
        ]

    def load_folder(self, folder: Path) -> ModuleStatus:
        try:
            manifest = read_manifest(folder)
        except ModuleFailed as error:
            return ModuleStatus(str(folder), None, None, "startup_failed", str(error))
        status = ModuleStatus(str(folder), manifest.name, manifest.site, "startup_failed")
        holder = self.sites.get(manifest.site)
        if holder is not None:
            status.reason = f"site {manifest.site!r} is already held by module {holder!r}"
            return status
        # The first module for a site holds it whether or not its code then loads.
        self.sites[manifest.site] = manifest.name
        try:
            self._start(folder, manifest, status)
        except ModuleFailed as error:
            status.reason = str(error)
        return status

    def context(self, name: str) -> ModuleContext:
        """The context core gave the loaded module ``name``."""
        (found,) = [h.context for h in self.hosted if h.name == name]
        return found

    def registered_modules(self) -> set[str]:
        return {h.name for h in self.hosted}

    def close(self) -> None:
        """Every module's closers, all within ``close_budget_s`` together."""
        deadline = time.monotonic() + self.close_budget_s
        for hosted in self.hosted:
            run_closers(hosted.name, hosted.registration, deadline)

    def _start(self, folder: Path, manifest: Manifest, status: ModuleStatus) -> None:
        loaded = [h.name for h in self.hosted]
        check_name(manifest.name, loaded)
        check_api(manifest.api)
        settings = module_settings(manifest, loaded, self.settings, self.environ)
        register = import_register(folder, manifest, self.register_budget_s)
        scratch = Registry()
        hosted = self._host(folder, manifest, settings, scratch)
        try:
            self._register(register, hosted, scratch)
        except ModuleFailed:
            # what it started before failing is stopped
            deadline = time.monotonic() + self.close_budget_s
            run_closers(hosted.name, hosted.registration, deadline)
            raise
        self._adopt(hosted, scratch, status)

    def _host(
        self, folder: Path, manifest: Manifest, settings: dict[str, str], scratch: Registry
    ) -> Hosted:
        """The module's context, registering into ``scratch`` until it has registered."""
        registration = Registration(scratch.module(manifest.name))
        context = ModuleContext(
            name=manifest.name,
            site=manifest.site,
            folder=folder,
            events=self.events(manifest.name),
            settings=settings,
            registration=registration,
        )
        return Hosted(manifest.name, context, registration)

    def _register(self, register: Any, hosted: Hosted, scratch: Registry) -> None:
        call_register(
            register, hosted.name, hosted.context, hosted.registration, self.register_budget_s
        )
        clash = (scratch.actions.keys() & self.registry.actions.keys()) | (
            scratch.leases.keys() & self.registry.leases.keys()
        )
        if clash:
            raise ModuleFailed(f"already registered by another module: {', '.join(sorted(clash))}")

    def _adopt(self, hosted: Hosted, scratch: Registry, status: ModuleStatus) -> None:
        """A module that registered: its actions and leases join core's registry."""
        self.registry.actions.update(scratch.actions)
        self.registry.leases.update(scratch.leases)
        self.hosted.append(hosted)
        status.status = "loaded"
        status.actions = sorted(scratch.actions)
        status.leases = sorted(scratch.leases)

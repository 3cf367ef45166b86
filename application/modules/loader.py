"""Loading modules from folders: one module per site, decided before any module code runs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runledger.application.modules.deadline import Raised, Returned, TimedOut, call_with_deadline
from runledger.application.modules.entry import import_entry
from runledger.application.modules.host import ModuleContext, ModuleEvents, Registration
from runledger.application.modules.manifest import Manifest, check_api, read_manifest
from runledger.application.modules.protocol import Registry
from runledger.application.modules.status import ModuleFailed, ModuleStatus, failure
from runledger.application.modules.threads import watching
from runledger.application.settings import module_scope, refused_setting, settings_prefix

__all__ = ["Loader", "ModuleContext", "ModuleEvents", "ModuleStatus", "folders"]

log = logging.getLogger("runledger.loader")

# Names core itself ledgers under: a module with one of them could close core's entries.
RESERVED_NAMES = frozenset({"core", "unknown"})
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
            self._run_closers(hosted.name, hosted.registration, deadline)

    def _run_closers(self, name: str, registration: Registration, deadline: float) -> None:
        """A closer that hangs or raises is logged and passed over (a hung one is abandoned in
        its daemon thread): closing never waits on a module past the deadline."""
        for closer in registration.closers:
            budget = max(0.05, deadline - time.monotonic())
            with watching(name):
                outcome = call_with_deadline(
                    closer, {}, budget, raw=True, name=f"module-close-{name}"
                )
            if isinstance(outcome, TimedOut):
                log.warning("closing module %s: a closer did not finish and was left behind", name)
            elif isinstance(outcome, Raised):
                log.warning("closing module %s: a closer raised %s", name, outcome.message)

    def _start(self, folder: Path, manifest: Manifest, status: ModuleStatus) -> None:
        self._check_name(manifest.name)
        check_api(manifest.api)
        settings = self._settings(manifest)
        register = self._import(folder, manifest)
        scratch = Registry()
        hosted = self._host(folder, manifest, settings, scratch)
        try:
            self._register(register, hosted, scratch)
        except ModuleFailed:
            # what it started before failing is stopped
            deadline = time.monotonic() + self.close_budget_s
            self._run_closers(hosted.name, hosted.registration, deadline)
            raise
        self._adopt(hosted, scratch, status)

    def _check_name(self, name: str) -> None:
        if name in RESERVED_NAMES:
            raise ModuleFailed(f"the name {name!r} is reserved for core")
        if any(h.name == name for h in self.hosted):
            raise ModuleFailed(f"a module named {name!r} is already loaded")

    def _settings(self, manifest: Manifest) -> dict[str, str]:
        """The module's own settings, after refusing a manifest that declares what is not."""
        for name in manifest.settings:
            refused = refused_setting(manifest.name, name)
            if refused:
                raise ModuleFailed(f"module.toml: settings: {refused}")
        prefix = settings_prefix(manifest.name)
        for hosted in self.hosted:
            theirs = settings_prefix(hosted.name)
            if prefix.startswith(theirs) or theirs.startswith(prefix):
                raise ModuleFailed(
                    f"its settings prefix {prefix} overlaps module "
                    f"{hosted.name!r}'s {theirs}: one would read the other's"
                )
        return module_scope(
            manifest.name, frozenset(manifest.settings), self.settings, self.environ
        )

    def _import(self, folder: Path, manifest: Manifest) -> Any:
        """The module's register function, imported within the register budget."""
        with watching(manifest.name):
            imported = call_with_deadline(
                import_entry,
                {"folder": folder, "manifest": manifest},
                self.register_budget_s,
                raw=True,
                stop=True,
                name=f"module-import-{manifest.name}",
            )
        if isinstance(imported, TimedOut | Raised):
            raise ModuleFailed(failure("importing it", imported))
        if not isinstance(imported, Returned):
            raise ModuleFailed("importing it answered no register function")
        return imported.value

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
        name = hosted.name
        with watching(name):
            outcome = call_with_deadline(
                register,
                {"ctx": hosted.context},
                self.register_budget_s,
                raw=True,
                stop=True,
                name=f"module-register-{name}",
            )
        hosted.registration.close()
        if isinstance(outcome, TimedOut | Raised):
            raise ModuleFailed(failure("register()", outcome))
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

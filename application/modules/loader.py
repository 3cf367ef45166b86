"""Loading modules from folders: one module per site, decided before any module code runs."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runledger.application.modules.deadline import (
    Outcome,
    Raised,
    Returned,
    TimedOut,
    call_with_deadline,
)
from runledger.application.modules.host import ModuleContext, ModuleEvents, Registration
from runledger.application.modules.plain import describe_error
from runledger.application.modules.protocol import Registry
from runledger.application.modules.threads import note_code, watching
from runledger.application.settings import module_scope, refused_setting, settings_prefix

__all__ = ["Loader", "ModuleContext", "ModuleEvents", "ModuleStatus", "folders"]

log = logging.getLogger("runledger.loader")

MODULE_API = "1.0"
# Names core itself ledgers under: a module with one of them could close core's entries.
RESERVED_NAMES = frozenset({"core", "unknown"})
BUILTIN_DIR = Path(__file__).parent.parent / "builtin_modules"


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    site: str = Field(min_length=1, max_length=128)
    api: str = Field(pattern=r"^\d+\.\d+$")
    entry: str = Field(pattern=r"^[\w./-]+:\w+$")
    settings: tuple[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")], ...] = ()
    """Settings outside ``RUNLEDGER_<NAME>_*`` the module reads, by their exact names."""


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
        if manifest.name in RESERVED_NAMES:
            raise ModuleFailed(f"the name {manifest.name!r} is reserved for core")
        if any(h.name == manifest.name for h in self.hosted):
            raise ModuleFailed(f"a module named {manifest.name!r} is already loaded")
        check_api(manifest.api)
        settings = self._settings(manifest)
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
            raise ModuleFailed(_failure("importing it", imported))
        if not isinstance(imported, Returned):
            raise ModuleFailed("importing it answered no register function")
        scratch = Registry()
        registration = Registration(scratch.module(manifest.name))
        context = ModuleContext(
            name=manifest.name,
            site=manifest.site,
            folder=folder,
            events=self.events(manifest.name),
            settings=settings,
            registration=registration,
        )
        try:
            self._register(imported.value, manifest.name, context, registration, scratch)
        except ModuleFailed:
            # what it started before failing is stopped
            self._run_closers(manifest.name, registration, time.monotonic() + self.close_budget_s)
            raise
        self.registry.actions.update(scratch.actions)
        self.registry.leases.update(scratch.leases)
        self.hosted.append(Hosted(manifest.name, context, registration))
        status.status = "loaded"
        status.actions = sorted(scratch.actions)
        status.leases = sorted(scratch.leases)

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

    def _register(
        self,
        register: Any,
        name: str,
        context: ModuleContext,
        registration: Registration,
        scratch: Registry,
    ) -> None:
        with watching(name):
            outcome = call_with_deadline(
                register,
                {"ctx": context},
                self.register_budget_s,
                raw=True,
                stop=True,
                name=f"module-register-{name}",
            )
        registration.close()
        if isinstance(outcome, TimedOut | Raised):
            raise ModuleFailed(_failure("register()", outcome))
        clash = (scratch.actions.keys() & self.registry.actions.keys()) | (
            scratch.leases.keys() & self.registry.leases.keys()
        )
        if clash:
            raise ModuleFailed(f"already registered by another module: {', '.join(sorted(clash))}")

    def registered_modules(self) -> set[str]:
        return {h.name for h in self.hosted}


def _failure(what: str, outcome: Outcome) -> str:
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


def read_manifest(folder: Path) -> Manifest:
    path = folder / "module.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModuleFailed("no module.toml in the folder") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ModuleFailed(f"module.toml is not valid TOML: {error}") from None
    try:
        return Manifest.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "manifest"
        raise ModuleFailed(f"module.toml: {where}: {first['msg']}") from None


def check_api(wanted: str) -> None:
    major, minor = (int(p) for p in wanted.split("."))
    core_major, core_minor = (int(p) for p in MODULE_API.split("."))
    if major != core_major or minor > core_minor:
        raise ModuleFailed(
            f"module API {wanted} is not compatible with this core's MODULE_API {MODULE_API}"
        )


def import_entry(folder: Path, manifest: Manifest) -> Callable[..., Any]:
    target, _, function = manifest.entry.rpartition(":")
    try:
        if target.endswith(".py"):
            path = (folder / target).resolve()
            if folder.resolve() not in path.parents:
                raise ModuleFailed(f"entry {manifest.entry!r} points outside the module folder")
            spec = importlib.util.spec_from_file_location(f"runledger_module_{manifest.name}", path)
            if spec is None or spec.loader is None:
                raise ModuleFailed(f"entry {manifest.entry!r} cannot be imported")
            note_code(spec.name, manifest.name)
            code = importlib.util.module_from_spec(spec)
            # Registered before it runs, as an import would be: dataclasses look it up.
            sys.modules[spec.name] = code
            try:
                spec.loader.exec_module(code)
            except BaseException:
                sys.modules.pop(spec.name, None)
                raise
        else:
            note_code(target, manifest.name)
            code = importlib.import_module(target)
    except ModuleFailed:
        raise
    except (Exception, SystemExit) as error:  # a failure importing a module's code is its own
        raise ModuleFailed(f"import failed: {describe_error(error)}") from None
    register = getattr(code, function, None)
    if not callable(register):
        raise ModuleFailed(f"entry {manifest.entry!r} names no function")
    return register  # type: ignore[no-any-return]

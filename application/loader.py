"""Loading modules from folders: one module per site, decided before any module code runs."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from application.deadline import Raised, Returned, TimedOut, call_with_deadline
from application.modules import Registry
from application.plain import Unreadable, describe_error, plain

log = logging.getLogger("runledger.loader")

MODULE_API = "1.0"
# Names core itself ledgers under: a module with one of them could close core's entries.
RESERVED_NAMES = frozenset({"core", "unknown"})
BUILTIN_DIR = Path(__file__).parent / "builtin_modules"


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    site: str = Field(min_length=1, max_length=128)
    api: str = Field(pattern=r"^\d+\.\d+$")
    entry: str = Field(pattern=r"^[\w./-]+:\w+$")


@dataclass
class ModuleStatus:
    folder: str
    name: str | None
    site: str | None
    status: Literal["loaded", "startup_failed"]
    reason: str | None = None
    actions: list[str] = field(default_factory=list)
    leases: list[str] = field(default_factory=list)


class ModuleEvents:
    """What a module may tell core, bound to its own name by the loader."""

    def __init__(self, module: str, reconcile: Callable[[str], Any],
                 expired: Callable[[str, Any, Any], dict[str, int]]) -> None:
        self._module = module
        self._reconcile = reconcile
        self._expired = expired

    def reconcile(self) -> Any:
        """The module saw its own reconnect: ask which of its entries are still in force.

        Answers the summary, or None when core could not reconcile now (it is logged): core's
        trouble never becomes an exception inside the module that asked.
        """
        try:
            return self._reconcile(self._module)
        except Exception:
            log.exception("reconcile asked by module %s failed", self._module)
            return None

    def expired(self, *, kind: Any, ref: Any) -> dict[str, int]:
        """The world ended one of this module's resources at its deadline."""
        try:
            return self._expired(self._module, plain(kind), plain(ref))
        except Unreadable:
            return {"expired": 0}
        except Exception:
            log.exception("expiry reported by module %s failed", self._module)
            return {"expired": 0}


@dataclass
class ModuleContext:
    """Everything a module's ``register(ctx)`` receives."""

    name: str
    site: str
    folder: Path
    events: ModuleEvents
    log: logging.Logger
    registry: Registry
    settings: dict[str, str]
    closers: list[Callable[[], None]] = field(default_factory=list)

    def action(self, action_id: str, **kwargs: Any) -> None:
        self.registry.module(self.name).action(action_id, **kwargs)

    def lease(self, lease_id: str, **kwargs: Any) -> None:
        self.registry.module(self.name).lease(lease_id, **kwargs)

    def on_close(self, fn: Callable[[], None]) -> None:
        self.closers.append(fn)


class ModuleFailed(Exception):
    """One module could not start; its reason is this exception's message."""


def folders(dirs: Iterable[Path]) -> list[Path]:
    """Every module folder, in name order."""
    found = [child for d in dirs if d.is_dir() for child in d.iterdir() if child.is_dir()]
    return sorted(found, key=lambda p: (p.name, str(p)))


class Loader:
    """Loads module folders into one registry. A failure is a module's status, never a crash."""

    def __init__(self, registry: Registry, events: Callable[[str], ModuleEvents],
                 settings: dict[str, str], register_budget_s: float = 10.0) -> None:
        self.registry = registry
        self.events = events
        self.settings = settings
        self.register_budget_s = register_budget_s
        self.sites: dict[str, str] = {}
        self.contexts: list[ModuleContext] = []

    def load(self, dirs: Iterable[Path]) -> list[ModuleStatus]:
        dirs = list(dirs)
        missing = [
            ModuleStatus(str(d), None, None, "startup_failed", "the modules folder does not exist")
            for d in dirs if not d.is_dir()
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

    def close(self) -> None:
        for context in self.contexts:
            for closer in context.closers:
                closer()

    def _start(self, folder: Path, manifest: Manifest, status: ModuleStatus) -> None:
        if manifest.name in RESERVED_NAMES:
            raise ModuleFailed(f"the name {manifest.name!r} is reserved for core")
        if any(m == manifest.name for m in self.registered_modules()):
            raise ModuleFailed(f"a module named {manifest.name!r} is already loaded")
        check_api(manifest.api)
        imported = call_with_deadline(
            import_entry, {"folder": folder, "manifest": manifest}, self.register_budget_s,
            raw=True,
        )
        if isinstance(imported, TimedOut):
            raise ModuleFailed(f"importing it did not finish within {imported.seconds:g}s")
        if isinstance(imported, Raised):
            error = imported.error
            raise ModuleFailed(str(error) if isinstance(error, ModuleFailed) else imported.message)
        if not isinstance(imported, Returned):
            raise ModuleFailed("importing it answered no register function")
        scratch = Registry()
        # Each module gets its own copy of the settings, without the ledger's credentials.
        settings = {k: v for k, v in self.settings.items() if k != "RUNLEDGER_DATABASE_URL"}
        context = ModuleContext(
            manifest.name, manifest.site, folder, self.events(manifest.name),
            logging.getLogger(f"runledger.module.{manifest.name}"), scratch, settings,
        )
        try:
            self._register(imported.value, context, scratch)
        except ModuleFailed:
            for closer in context.closers:  # whatever it started before failing is stopped
                closer()
            raise
        self.registry.actions.update(scratch.actions)
        self.registry.leases.update(scratch.leases)
        context.registry = self.registry
        self.contexts.append(context)
        status.status = "loaded"
        status.actions = sorted(scratch.actions)
        status.leases = sorted(scratch.leases)

    def _register(self, register: Any, context: ModuleContext, scratch: Registry) -> None:
        outcome = call_with_deadline(register, {"ctx": context}, self.register_budget_s, raw=True)
        if isinstance(outcome, Raised):
            raise ModuleFailed(f"register() raised {outcome.message}")
        if isinstance(outcome, TimedOut):
            raise ModuleFailed(f"register() did not return within {outcome.seconds:g}s")
        clash = (scratch.actions.keys() & self.registry.actions.keys()) | (
            scratch.leases.keys() & self.registry.leases.keys()
        )
        if clash:
            raise ModuleFailed(f"already registered by another module: {', '.join(sorted(clash))}")

    def registered_modules(self) -> set[str]:
        return {c.name for c in self.contexts}


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
            code = importlib.util.module_from_spec(spec)
            # Registered before it runs, as an import would be: dataclasses look it up.
            sys.modules[spec.name] = code
            try:
                spec.loader.exec_module(code)
            except BaseException:
                sys.modules.pop(spec.name, None)
                raise
        else:
            code = importlib.import_module(target)
    except ModuleFailed:
        raise
    except (Exception, SystemExit) as error:  # a failure importing a module's code is its own
        raise ModuleFailed(f"import failed: {describe_error(error)}") from None
    register = getattr(code, function, None)
    if not callable(register):
        raise ModuleFailed(f"entry {manifest.entry!r} names no function")
    return register  # type: ignore[no-any-return]

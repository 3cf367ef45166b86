"""What core refuses before any of a module's code runs: a name core keeps or another module
holds, a setting the module may not declare, a settings prefix overlapping another module's."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from runledger.application.modules.manifest import Manifest
from runledger.application.modules.status import ModuleFailed
from runledger.application.settings import module_scope, refused_setting, settings_prefix

# Names core itself ledgers under: a module with one of them could close core's entries.
RESERVED_NAMES = frozenset({"core", "unknown"})


def check_name(name: str, loaded: Collection[str]) -> None:
    """Refuses a name core keeps, or one a module already ``loaded`` holds."""
    if name in RESERVED_NAMES:
        raise ModuleFailed(f"the name {name!r} is reserved for core")
    if name in loaded:
        raise ModuleFailed(f"a module named {name!r} is already loaded")


def module_settings(
    manifest: Manifest,
    loaded: Collection[str],
    settings: Mapping[str, str],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """The module's own settings, after refusing a manifest that declares what is not."""
    for name in manifest.settings:
        refused = refused_setting(manifest.name, name)
        if refused:
            raise ModuleFailed(f"module.toml: settings: {refused}")
    prefix = settings_prefix(manifest.name)
    for other in loaded:
        theirs = settings_prefix(other)
        if prefix.startswith(theirs) or theirs.startswith(prefix):
            raise ModuleFailed(
                f"its settings prefix {prefix} overlaps module "
                f"{other!r}'s {theirs}: one would read the other's"
            )
    return module_scope(manifest.name, frozenset(manifest.settings), settings, environ)

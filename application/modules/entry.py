"""A module's entry (``file.py:function`` or ``package.module:function``): its code imported,
and the register function it names."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from runledger.application.modules.manifest import Manifest
from runledger.application.modules.plain import describe_error
from runledger.application.modules.status import ModuleFailed
from runledger.application.modules.threads import note_code


def import_entry(folder: Path, manifest: Manifest) -> Callable[..., Any]:
    target, _, function = manifest.entry.rpartition(":")
    try:
        if target.endswith(".py"):
            code = _import_file(folder, manifest, target)
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


def _import_file(folder: Path, manifest: Manifest, target: str) -> ModuleType:
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
    return code

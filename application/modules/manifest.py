"""A module folder's module.toml: who the module is, which site it holds, where its code is."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runledger.application.modules.status import ModuleFailed
from runledger.domain.values import pattern, undecodable, validation_problem

MODULE_API = "2.0"

# What each major version of the module contract changed, said when an older module is refused.
CHANGED = {
    2: "2.0 passes idempotency_key to apply and restore, and revert must end (fence) its key",
}


_NAME = pattern(
    r"^[a-z][a-z0-9_-]{0,63}$",
    "a lower-case letter, then up to 63 lower-case letters, digits, '_' or '-'",
)
_API = pattern(r"^\d+\.\d+$", f"a version such as {MODULE_API}")
_ENTRY = pattern(r"^[\w./-]+:\w+$", "a file and its function, such as code.py:register")
_SETTING = pattern(
    r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
    "a variable's name: letters, digits and '_', not a digit first",
)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME)
    site: str = Field(min_length=1, max_length=128)
    api: str = Field(pattern=_API)
    entry: str = Field(pattern=_ENTRY)
    settings: tuple[Annotated[str, Field(pattern=_SETTING)], ...] = ()
    """Settings outside ``RUNLEDGER_<NAME>_*`` the module reads, by their exact names."""


def read_manifest(folder: Path) -> Manifest:
    path = folder / "module.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModuleFailed("no module.toml in the folder") from None
    except IsADirectoryError:
        raise ModuleFailed("module.toml is a folder, not a file") from None
    except OSError as error:
        raise ModuleFailed(f"module.toml cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ModuleFailed(f"module.toml is not UTF-8 text: {undecodable(error)}") from None
    except tomllib.TOMLDecodeError as error:
        raise ModuleFailed(f"module.toml is not valid TOML: {error}") from None
    try:
        return Manifest.model_validate(raw)
    except ValidationError as error:
        raise ModuleFailed(f"module.toml: {validation_problem(error, 'manifest')}") from None


def check_api(wanted: str) -> None:
    major, minor = (int(p) for p in wanted.split("."))
    core_major, core_minor = (int(p) for p in MODULE_API.split("."))
    if major != core_major or minor > core_minor:
        why = f"module API {wanted} is not compatible with this core's MODULE_API {MODULE_API}"
        changes = [CHANGED[n] for n in range(major + 1, core_major + 1) if n in CHANGED]
        if changes:
            why += f": {'; '.join(changes)} — see MODULES.md"
        raise ModuleFailed(why)

"""A module folder's module.toml: who the module is, which site it holds, where its code is."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runledger.application.modules.status import ModuleFailed

MODULE_API = "2.0"

# What each major version of the module contract changed, said when an older module is refused.
CHANGED = {
    2: "2.0 passes idempotency_key to apply and restore, and revert must end (fence) its key",
}


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    site: str = Field(min_length=1, max_length=128)
    api: str = Field(pattern=r"^\d+\.\d+$")
    entry: str = Field(pattern=r"^[\w./-]+:\w+$")
    settings: tuple[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")], ...] = ()
    """Settings outside ``RUNLEDGER_<NAME>_*`` the module reads, by their exact names."""


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
        why = f"module API {wanted} is not compatible with this core's MODULE_API {MODULE_API}"
        changes = [CHANGED[n] for n in range(major + 1, core_major + 1) if n in CHANGED]
        if changes:
            why += f": {'; '.join(changes)} — see MODULES.md"
        raise ModuleFailed(why)

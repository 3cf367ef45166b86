"""The layout's promises, read from the imports themselves (every import statement, nested ones
too): the three front ends (the API, the console, the CLI) stand side by side and none imports
another; the read layer, the services and the store import no front end; the domain imports
nothing of the application. asgi.py, which serves the API beside the console, is the one place
that names two front ends."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = "runledger.application"
FRONT_ENDS = {"api": f"{APP}.api", "web": f"{APP}.web", "cli": f"{APP}.cli"}
BELOW_FRONT_ENDS = ("reading", "services", "store", "modules", "builtin_modules")


def imported(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def reaches(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def crossings(folder: Path, forbidden: list[str]) -> list[str]:
    """Each import in ``folder`` of one of the ``forbidden`` packages, named by file."""
    return [
        f"{path.relative_to(folder)} imports {module}"
        for path in sorted(folder.rglob("*.py"))
        for module in imported(path)
        if any(reaches(module, package) for package in forbidden)
    ]


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_no_front_end_imports_another(front_end: str) -> None:
    others = [package for name, package in FRONT_ENDS.items() if name != front_end]
    assert crossings(ROOT / "application" / front_end, others) == []


@pytest.mark.parametrize("layer", BELOW_FRONT_ENDS)
def test_what_lies_below_the_front_ends_imports_none_of_them(layer: str) -> None:
    front_ends = [*FRONT_ENDS.values(), f"{APP}.asgi"]
    assert crossings(ROOT / "application" / layer, front_ends) == []


def test_the_domain_and_the_views_import_nothing_of_the_application() -> None:
    assert crossings(ROOT / "domain", [APP, "runledger.projections"]) == []
    assert crossings(ROOT / "projections", [APP]) == []


def test_the_check_sees_a_crossing_when_there_is_one(tmp_path: Path) -> None:
    (tmp_path / "route.py").write_text(
        "def f():\n    from runledger.application.cli.display import json_text\n"
    )
    assert crossings(tmp_path, [FRONT_ENDS["cli"]]) != []

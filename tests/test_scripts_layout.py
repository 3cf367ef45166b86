"""The scripts stand on their own: benchmarks and drills share helpers inside the scripts package
and import nothing of the tests (the tests may import them), nor reach for the path by hand. Each
runs from the project root as ``python -m scripts.NAME``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs the scripts in processes of their own.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
PATH_EDITS = {"insert", "append", "extend"}


def sources() -> list[Path]:
    return sorted(p for p in SCRIPTS.rglob("*.py") if "__pycache__" not in p.parts)


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an ``import`` or an absolute ``from ... import`` names, with its line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def names_sys_path(node: ast.expr, path_names: set[str]) -> bool:
    """``sys.path``, or a name bound to it (``from sys import path``)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "path" and isinstance(node.value, ast.Name) and node.value.id == "sys"
    return isinstance(node, ast.Name) and node.id in path_names


def path_edits(tree: ast.AST) -> list[int]:
    """Lines that call ``sys.path.insert``, ``.append`` or ``.extend``."""
    path_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "sys"
        for alias in node.names
        if alias.name == "path"
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in PATH_EDITS
        and names_sys_path(node.func.value, path_names)
    ]


def trouble(source: str) -> list[str]:
    tree = ast.parse(source)
    found = [
        f"{line}: imports {name}"
        for line, name in imported(tree)
        if name == "tests" or name.startswith("tests.")
    ]
    return found + [f"{line}: edits sys.path" for line in path_edits(tree)]


def test_there_are_scripts_to_read() -> None:
    found = {p.relative_to(ROOT).as_posix() for p in sources()}
    assert {"scripts/__init__.py", "scripts/chaos_drill.py", "scripts/world_audit.py"} <= found


@pytest.mark.parametrize("path", sources(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_script_imports_nothing_of_the_tests_and_leaves_the_path_alone(path: Path) -> None:
    assert trouble(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_an_import_of_the_tests_and_an_edit_of_the_path() -> None:
    source = (
        "import sys\nfrom sys import path as p\nimport tests.support.game\nfrom tests import x\n"
        "sys.path.insert(0, '.')\np.append('.')\nfrom scripts.pg import PG_ADMIN\n"
        "import testsuite\nfrom .drills import crash_walks\n"
    )
    assert trouble(source) == [
        "3: imports tests.support.game",
        "4: imports tests",
        "5: edits sys.path",
        "6: edits sys.path",
    ]


@pytest.mark.parametrize("script", ["chaos_drill", "world_audit"])
def test_a_script_runs_as_a_module_from_the_project_root(script: str) -> None:
    """Both import the drills from the scripts package: ``-m`` from the root is all they need."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", f"scripts.{script}", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:"), done.stdout

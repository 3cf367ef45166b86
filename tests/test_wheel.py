"""The wheel holds every module of the tree: packages are found by setuptools (pyproject.toml),
not listed by hand, so a new sub-package cannot silently miss it. Built from a copy of the
checkout, so the build leaves nothing in the working tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# Builds the wheel in a process of its own.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("domain", "projections", "application")


def tree_files(suffixes: tuple[str, ...]) -> set[str]:
    return {
        f"runledger/{path.relative_to(ROOT)}"
        for folder in FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in suffixes and "__pycache__" not in path.parts
    }


@pytest.mark.slow
def test_the_wheel_holds_every_module_template_and_asset_of_the_tree(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "artifacts"),
    )
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = dist.glob("runledger-*.whl")
    held = set(zipfile.ZipFile(wheel).namelist())
    wanted = tree_files((".py", ".html", ".css", ".js", ".svg", ".toml", ".yml"))
    assert wanted - held == set()
    assert {"runledger/__init__.py", "runledger/py.typed"} <= held

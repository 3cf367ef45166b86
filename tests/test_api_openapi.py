"""The committed openapi.json is what the routes say today."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_openapi_document_is_current() -> None:
    document = runpy.run_path(str(ROOT / "scripts" / "openapi.py"))["document"]
    committed = (ROOT / "openapi.json").read_text(encoding="utf-8")
    assert committed == document(), (
        "openapi.json is stale: run `python scripts/openapi.py` and commit the result"
    )

"""Write the API's OpenAPI document to openapi.json, or to the path given.

    .venv/bin/python -m scripts.openapi [PATH]

tests/entrypoints/test_api_openapi.py fails while the committed document differs from what this
writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runledger.application.api.app import routes

ROOT = Path(__file__).resolve().parent.parent


def document() -> str:
    return json.dumps(routes().openapi(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "openapi.json"
    target.write_text(document(), encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

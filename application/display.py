"""What the CLI (and later the web console) shows: text by the rule in domain/text.py, and JSON
that is valid whatever the value holds."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import date, datetime
from typing import Any
from uuid import UUID

from runledger.domain.text import MAX_CHARS, safe_repr, safe_text

__all__ = ["MAX_CHARS", "json_text", "safe_repr", "safe_text"]

MAX_DEPTH = 64


def json_text(value: object) -> str:
    """``value`` as valid JSON whatever it holds: NaN and infinities become ``null``, what JSON
    has no word for becomes its (safe) repr, and nothing raises."""
    return json.dumps(_plain(value, 0), indent=2)


def _plain(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return "…"
    if value is None or type(value) in (bool, int, str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date | UUID):
        return str(value)
    try:
        return _container(value, depth)
    except Exception:  # a container that raises when walked is shown as itself
        return safe_repr(value)


def _container(value: Any, depth: int) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {_key(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v, depth + 1) for v in value]
    return safe_repr(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else safe_text(key)

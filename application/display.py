"""A data value made safe to show a person: the one rule the terminal and the web console share.

Any module, author or operator string may carry terminal control sequences, lone surrogates or a
megabyte of text. ``safe_text`` turns each into something a screen shows and never obeys; the
caller still escapes for its medium (the terminal prints it without markup, the web page
HTML-escapes it). Nothing here knows about Rich or HTML.
"""

from __future__ import annotations

import dataclasses
import json
import math
import unicodedata
from datetime import date, datetime
from typing import Any
from uuid import UUID

MAX_CHARS = 2_000
"""The most of one field a screen shows; the rest is cut with an ellipsis that says how much."""

MAX_DEPTH = 64

# Characters that reorder what follows them on screen (Trojan Source): shown, never obeyed.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def safe_text(value: object, limit: int = MAX_CHARS) -> str:
    """``value`` as text a screen cannot mistake for control: every control character (C0, DEL,
    C1), lone surrogate and bidi override written as a visible escape such as ``\\x1b``; more than
    ``limit`` characters cut with "… (N more characters)". Never raises."""
    text = value if type(value) is str else _str(value)
    pieces: list[str] = []
    size = 0
    for char in text:
        piece = _visible(char)
        if size + len(piece) > limit:
            break
        pieces.append(piece)
        size += len(piece)
    hidden = len(text) - len(pieces)
    head = "".join(pieces)
    return f"{head}… ({hidden:,} more characters)" if hidden else head


def safe_repr(value: object, limit: int = MAX_CHARS) -> str:
    """``repr(value)`` made safe the same way; never raises."""
    try:
        shown = repr(value)
    except Exception:  # a value that cannot describe itself is still shown
        shown = f"<unprintable {type(value).__name__}>"
    return safe_text(shown, limit)


def json_text(value: object) -> str:
    """``value`` as valid JSON whatever it holds: NaN and infinities become ``null``, what JSON
    has no word for becomes its (safe) repr, and nothing raises."""
    return json.dumps(_plain(value, 0), indent=2)


def _str(value: object) -> str:
    try:
        return str(value)
    except Exception:  # a value whose __str__ raises is still shown
        return safe_repr(value)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    if char in _BIDI or unicodedata.category(char) in ("Cc", "Cs"):
        code = ord(char)
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return char


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

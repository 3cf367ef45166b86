"""A value as text a screen shows and never obeys: the one rule the terminal, the web console and
every error sentence share.

Any module, author or operator string may carry terminal control sequences, lone surrogates or a
megabyte of text. ``safe_text`` turns each into something visible; the caller still escapes for
its medium (the terminal prints without markup, a web page HTML-escapes). Nothing here knows
about Rich or HTML.
"""

from __future__ import annotations

import unicodedata

MAX_CHARS = 2_000
"""The most of one field a screen shows; the rest is cut with an ellipsis that says how much."""

# Characters that reorder what follows them on screen (Trojan Source): shown, never obeyed.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def safe_text(value: object, limit: int = MAX_CHARS) -> str:
    """``value`` as text a screen cannot mistake for control: every control character (C0, DEL,
    C1), lone surrogate and bidi override written as a visible escape such as ``\\x1b``; more than
    ``limit`` characters cut with "… (N more characters)". Never raises."""
    text = value if type(value) is str else _str(value)
    # Printable text (no control, format, surrogate or separator character but the space) is
    # shown as it is: the console's page of a run of 1,000 entries spent a third of its CPU
    # looking at each character of ids, names and dates one by one.
    if len(text) <= limit and text.isprintable():
        return text
    return _escaped(text, limit)


def _escaped(text: str, limit: int) -> str:
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


def _str(value: object) -> str:
    try:
        return str(value)
    except Exception:  # a value whose __str__ raises is still shown
        return safe_repr(value)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    if char in _BIDI or unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp"):
        code = ord(char)
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return char

"""What may enter an event: the one rule every string and number obeys before it is stored.

An event is kept for ever and read by every projection, so one value no reader can take (a NaN
JSON refuses, a NUL PostgreSQL text refuses, a lone surrogate UTF-8 cannot encode, a megabyte
string) would stop every reader for good. Values are checked where they come in; text that is
only ever shown (an error message) is made safe instead, so the real failure stays visible.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.domain.errors import DomainError

MAX_TEXT = 10_000
"""Characters in one string of a stored value."""
MAX_SHOWN = 2_000
"""Characters kept of a display-only text, such as a module's error."""
MAX_DEPTH = 32
MAX_NODES = 20_000
MAX_INT = 2**63 - 1  # readers parse integers as 64-bit

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")


class UnsafeValue(DomainError, ValueError):
    """A value that no reader of the store could take; ``where`` names the field."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}" if where else why)
        self.where = where
        self.why = why


def text_problem(text: str) -> str | None:
    """Why this string cannot be stored, or None."""
    if len(text) > MAX_TEXT:
        return f"a text of {len(text):,} characters is longer than {MAX_TEXT:,}"
    found = _BAD_CHARS.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "a text must not contain the NUL character"
    return f"a text must not contain a lone surrogate (\\u{ord(found.group()):04x})"


def value_problem(value: Any, where: str = "") -> tuple[str, str] | None:
    """The first place in a JSON-like value that cannot be stored, and why; None if all can.

    Walked without recursion: a deeply nested value is data, not a reason to crash.
    """
    stack: list[tuple[str, Any, int]] = [(where, value, 0)]
    nodes = 0
    while stack:
        path, item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return where, f"a value of more than {MAX_NODES:,} parts is too large"
        if depth > MAX_DEPTH:
            return path, f"a value nested more than {MAX_DEPTH} deep is too deep"
        if type(item) is dict:
            for key, child in item.items():
                if type(key) is not str or text_problem(key) is not None:
                    return _join(path, key), "a key must be plain text"
                stack.append((_join(path, key), child, depth + 1))
        elif type(item) in (list, tuple):
            stack.extend((_join(path, i), child, depth + 1) for i, child in enumerate(item))
        elif (problem := _scalar_problem(item)) is not None:
            return path, problem
    return None


def check_value(value: Any, where: str) -> Any:
    """The value itself when every part of it can be stored; else UnsafeValue naming the part."""
    found = value_problem(value, where)
    if found is not None:
        raise UnsafeValue(*found)
    return value


def check_text(text: Any, where: str, *, limit: int = MAX_TEXT, empty: bool = True) -> str:
    """A string that can be stored, or UnsafeValue naming the field."""
    if not isinstance(text, str):
        raise UnsafeValue(where, f"must be text, not {type(text).__name__}")
    if not empty and not text.strip():
        raise UnsafeValue(where, "must not be empty")
    if len(text) > limit:
        raise UnsafeValue(where, f"a text of {len(text):,} characters is longer than {limit:,}")
    problem = text_problem(text)
    if problem is not None:
        raise UnsafeValue(where, problem)
    return text


def made_storable(text: str, limit: int = MAX_SHOWN) -> str:
    """Display-only text made storable: NUL and lone surrogates written out, length bounded."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return written_out(text)


def written_out(text: str) -> str:
    """The text with NUL and lone surrogates written as escapes; cheap when there are none."""
    if text.isascii() and "\x00" not in text:
        return text
    return _BAD_CHARS.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    return "\\x00" if char == "\x00" else f"\\u{ord(char):04x}"


def _join(path: str, key: object) -> str:
    plain = type(key) is int or (type(key) is str and len(key) <= 64 and not text_problem(key))
    name = key if plain else "?"
    return f"{path}.{name}" if path else str(name)


def _scalar_problem(item: Any) -> str | None:
    kind = type(item)
    if item is None or kind is bool:
        return None
    if kind is str:
        return text_problem(item)
    if kind is int:
        return None if -MAX_INT <= item <= MAX_INT else "an integer beyond 64 bits"
    if kind is float:
        return None if math.isfinite(item) else f"{item!r} is not a number a ledger can store"
    if isinstance(item, datetime | UUID):
        return None
    return f"a {kind.__name__} is not a JSON value"


def validation_problem(error: Any, whole: str = "") -> str:
    """One sentence for a pydantic ValidationError: the field's full path (``whole`` when it is
    the value itself), then what is wrong."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or whole
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, UnsafeValue):
        where = ".".join(p for p in (where, cause.where) if p)
        return f"{where}: {cause.why}" if where else cause.why
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def storable(value: Any) -> Any:
    """A pydantic after-validator: a value every reader can take, else the part that is not."""
    return check_value(value, "")


def storable_text(value: str) -> str:
    """A pydantic after-validator for one text field."""
    return check_text(value, "")

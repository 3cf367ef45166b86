"""What may enter an event: the one rule every string and number obeys before it is stored.

An event is kept for ever and read by every projection, so one value no reader can take (a NaN
JSON refuses, a NUL PostgreSQL text refuses, a lone surrogate UTF-8 cannot encode, a megabyte
string) would stop every reader for good. Values are checked where they come in; text that is
only ever shown (an error message) is made safe instead, so the real failure stays visible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
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
        if not math.isfinite(item):
            return f"{item!r} is not a number a ledger can store"
        # JSON does not tell 1e20 from 100000000000000000000, and neither does the document
        # (a whole number is an integer to JSON Schema): both are past 64 bits.
        return "an integer beyond 64 bits" if abs(item) > MAX_INT and item.is_integer() else None
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
    message = plain_message(first)
    return f"{where}: {message}" if where else message


_PATTERN_WORDS: dict[str, str] = {}

_PLAIN = {
    "missing": "is required",
    "extra_forbidden": "is not a field this takes",
    "model_type": "must be an object ({...})",
    "model_attributes_type": "must be an object ({...})",
    "dict_type": "must be an object ({...})",
    "list_type": "must be a list ([...])",
    "tuple_type": "must be a list ([...])",
    "string_type": "must be text",
    "string_unicode": "must be text",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_parsing_size": "must be a whole number of at most 19 digits",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "uuid_type": "must be an id (a UUID such as 0d9e3254-f40e-46fd-ae47-737fcc498b53)",
    "uuid_parsing": "must be an id (a UUID such as 0d9e3254-f40e-46fd-ae47-737fcc498b53)",
    "datetime_type": "must be an ISO 8601 time",
    "datetime_parsing": "must be an ISO 8601 time",
    "datetime_from_date_parsing": "must be an ISO 8601 time",
    "json_invalid": "is not valid JSON",
}
"""What each kind of pydantic error means, in words: its own message names Python's types
("instance of RunSpec", "a valid dictionary") and its regular expressions."""

_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be more than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "string_too_long": ("max_length", "must be at most {} characters long"),
}


_COLLECTIONS = ("List", "Tuple", "Set", "Frozenset", "Dictionary", "Dict")


def pattern(regex: str, words: str) -> str:
    """``regex``, remembered with the words a refusal says it in (``must be {words}``)."""
    _PATTERN_WORDS[regex] = words
    return regex


def plain_message(detail: Mapping[str, Any]) -> str:
    """What one pydantic error detail says is wrong, as words a person reads: no Python type,
    no regular expression, no "Value error," (the field is named by the caller)."""
    kind = str(detail.get("type", ""))
    ctx: Mapping[str, Any] = detail.get("ctx") or {}
    if kind in _PLAIN:
        return _PLAIN[kind]
    if kind in _BOUNDS and _BOUNDS[kind][0] in ctx:
        key, said = _BOUNDS[kind]
        return said.format(_number(ctx[key]))
    if kind == "too_long" and "max_length" in ctx:
        most = f"{int(ctx['max_length']):,}"
        if ctx.get("field_type") in _COLLECTIONS:
            return f"may have at most {most} items, not {int(ctx.get('actual_length', 0)):,}"
        return f"must be at most {most} long"
    if kind in ("too_short", "string_too_short"):
        least = int(ctx.get("min_length", 1))
        if least == 1:
            return "must not be empty"
        return f"must have at least {least:,} " + ("items" if kind == "too_short" else "characters")
    if kind in ("literal_error", "enum") and "expected" in ctx:
        return f"must be {ctx['expected']}"
    if kind == "string_pattern_mismatch":
        words = _PATTERN_WORDS.get(str(ctx.get("pattern")))
        return f"must be {words}" if words else "is not in the form expected"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    message = str(detail.get("msg", "is not accepted"))
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message.replace("Input should be", "must be").replace(" or instance of", " or")


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def undecodable(error: UnicodeDecodeError) -> str:
    """Where bytes that are not UTF-8 were found, in words (the codec's own message names
    Python's codec and its reason)."""
    found = error.object[error.start : error.start + 4]
    shown = " ".join(f"0x{byte:02x}" for byte in found[: max(1, error.end - error.start)])
    return f"byte {shown} at offset {error.start:,} is not UTF-8; save it as UTF-8 text"


def storable(value: Any) -> Any:
    """A pydantic after-validator: a value every reader can take, else the part that is not."""
    return check_value(value, "")


def storable_text(value: str) -> str:
    """A pydantic after-validator for one text field."""
    return check_text(value, "")

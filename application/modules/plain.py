"""A module's answer copied into plain data before core looks at it.

Modules are code: an answer may be a dict subclass whose ``.get`` raises, an exception whose
``__str__`` raises, a generator, a cycle. Copying it once, in the module's own thread and under
its deadline, through the built-in types' own methods (never the answer's overrides), leaves
judging with nothing that can raise or hang.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from runledger.domain.values import MAX_DEPTH, MAX_NODES, made_storable


class Unreadable(ValueError):
    """An answer that is not plain data; the message says where and what."""


def plain(value: Any) -> Any:
    """The answer as exact dicts, lists, strings, numbers, booleans, None and datetimes."""
    budget = [MAX_NODES]
    return _copy(value, "the answer", 0, budget)


def _copy(value: Any, where: str, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise Unreadable(f"the answer has more than {MAX_NODES:,} parts")
    if depth > MAX_DEPTH:
        raise Unreadable(f"{where} is nested more than {MAX_DEPTH} deep")
    kind = type(value)  # never isinstance: an object can make reading its __class__ raise
    if value is None or value is True or value is False:
        return value
    if issubclass(kind, str):
        return str.__str__(value)
    if issubclass(kind, bool):
        return bool(int.__int__(value))
    if issubclass(kind, int):
        return int.__int__(value)
    if issubclass(kind, float):
        return float.__float__(value)
    if issubclass(kind, datetime):
        return datetime.fromisoformat(datetime.isoformat(value))
    if issubclass(kind, dict):
        copied: dict[str, Any] = {}
        for key, item in dict.items(value):
            if not issubclass(type(key), str):
                raise Unreadable(f"{where} has a key that is not text: a {type(key).__name__}")
            name = str.__str__(key)
            copied[name] = _copy(item, f"{where}.{made_storable(name, 40)}", depth + 1, budget)
        return copied
    if issubclass(kind, list):
        items: Any = list.__iter__(value)
    elif issubclass(kind, tuple):
        items = tuple.__iter__(value)
    else:
        raise Unreadable(f"{where} is a {kind.__name__}, which is not plain data")
    return [_copy(item, f"{where}[{i}]", depth + 1, budget) for i, item in enumerate(items)]


def describe_error(error: BaseException) -> str:
    """``TypeName: message`` for an exception, even one whose ``__str__`` raises."""
    name = type(error).__name__
    try:
        text = str(error)
        if not isinstance(text, str):
            raise TypeError
        text = str.__str__(text)
    except BaseException:  # a module's exception is module code too
        return made_storable(f"{name} (its message could not be read)")
    return made_storable(f"{name}: {text}" if text else name)

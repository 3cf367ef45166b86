"""Decoding events for projections without paying for fields nobody reads.

A rebuild reads millions of events and each view looks at a few fields of each. Parsing the
stored JSON with orjson and reviving a typed value (a datetime, a UUID) only when a view asks
for it reads the same events into objects of the same classes — singledispatch and isinstance
work unchanged — faster than the library's per-object decoding hook (scripts/MEASUREMENTS.md,
"Lazy decoding of events").

The parsed JSON object becomes the event's ``__dict__`` as it is: plain fields (text, numbers)
are read at C speed. Each field whose annotation allows anything else is a descriptor of the
event's class, which revives the stored form on first read.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import (
    DatetimeAsISO,
    Transcoding,
    TranscodingNotRegisteredError,
    UUIDAsHex,
)
from eventsourcing.utils import resolve_topic

_PLAIN = frozenset({"str", "int", "float", "bool", "None"})
ISO, HEX = DatetimeAsISO.name, UUIDAsHex.name
OURS = frozenset({"originator_id", "originator_version"})
"""Fields the stored row gives, not its JSON."""
_MISSING = object()


class Revived:
    """A typed field of a lazy event, read from the event's ``__dict__`` (the stored JSON as
    parsed) and revived on first read, in place. A data descriptor, so it is asked before the
    ``__dict__`` is: a value revived to an object is handed back as it is; one revived to a
    dict or list (a payload) is walked again, which changes nothing."""

    __slots__ = ("default", "field", "hex", "iso", "name", "transcodings")

    def __init__(self, field: dataclasses.Field[Any], transcodings: dict[str, Transcoding]):
        self.name = field.name
        self.field = field
        self.transcodings = transcodings
        # Most typed fields are moments and ids: read them without the general walk when the
        # transcodings are the library's own (datetime.fromisoformat, UUID).
        self.iso = type(transcodings.get(ISO)) is DatetimeAsISO
        self.hex = type(transcodings.get(HEX)) is UUIDAsHex

    def __get__(self, event: Any, owner: type[Any] | None = None) -> Any:
        if event is None:
            return self
        fields = event.__dict__
        stored = fields.get(self.name, _MISSING)
        kind = type(stored)
        value: Any
        if kind is dict:
            tag = stored.get("_type_")
            if tag == ISO and self.iso and len(stored) == 2:
                value = datetime.fromisoformat(stored["_data_"])
            elif tag == HEX and self.hex and len(stored) == 2:
                value = known_uuid(stored["_data_"])
            else:
                value = revive(stored, self.transcodings)
        elif kind is list:
            value = revive(stored, self.transcodings)
        elif stored is _MISSING:
            return self._default()
        else:
            return stored
        fields[self.name] = value
        return value

    def __set__(self, event: Any, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {self.name!r} of an event")

    def _default(self) -> Any:
        if self.field.default is not dataclasses.MISSING:
            return self.field.default
        if self.field.default_factory is not dataclasses.MISSING:
            return self.field.default_factory()
        raise AttributeError(self.name)


_UUIDS: dict[str, UUID] = {}


def known_uuid(text: str) -> UUID:
    """UUIDs are immutable, and the same few recur (a run's id in each of its entries, steps
    and lines): the last few thousand read are kept."""
    found = _UUIDS.get(text)
    if found is None:
        if len(_UUIDS) >= 4096:
            _UUIDS.clear()
        found = _UUIDS[text] = UUID(text)
    return found


def plain(annotation: Any) -> bool:
    """Whether a field's stored JSON is the value itself (text, a number, a flag or null)."""
    if isinstance(annotation, str):
        return all(part.strip() in _PLAIN for part in annotation.split("|"))
    return annotation in (str, int, float, bool, type(None))


_CLASSES: dict[str, type[Any]] = {}


def lazy_class(topic: str, transcodings: dict[str, Transcoding]) -> type[Any]:
    """The lazy subclass of the topic's event class: a descriptor for each typed field."""
    found = _CLASSES.get(topic)
    if found is None:
        cls = resolve_topic(topic)
        typed = [f for f in dataclasses.fields(cls) if not plain(f.type) and f.name not in OURS]
        found = type(
            f"Lazy{cls.__name__}", (cls,), {f.name: Revived(f, transcodings) for f in typed}
        )
        found.__qualname__ = cls.__qualname__
        _CLASSES[topic] = found
    return found


def lazy_event(
    topic: str,
    originator_id: str,
    version: int,
    state: bytes,
    transcodings: dict[str, Transcoding],
) -> Any:
    cls = lazy_class(topic, transcodings)
    fields = parse_state(state)
    if type(fields) is not dict:
        raise TypeError(f"the stored state is a JSON {type(fields).__name__}, not an object")
    fields["originator_id"] = originator_id
    fields["originator_version"] = version
    event = object.__new__(cls)
    object.__setattr__(event, "__dict__", fields)  # event classes are frozen dataclasses
    return event


def parse_state(state: bytes | str) -> Any:
    """Stored JSON: an event's state, or a view's JSON column. Events written before NaN and
    huge integers were refused hold what orjson rejects (and a view's column may hold NaN);
    the standard parser still reads them, so they never stop a reader."""
    try:
        return orjson.loads(state)
    except orjson.JSONDecodeError:
        return json.loads(state)


def _transcoding(name: str, transcodings: dict[str, Transcoding]) -> Transcoding:
    """The transcoding of ``name``, refused as the library refuses it (a TypeError naming it)."""
    try:
        return transcodings[name]
    except KeyError:
        raise TranscodingNotRegisteredError(
            f"Data serialized with name {name!r} is not deserializable. Please register a "
            "custom transcoding for this type."
        ) from None


def revive(value: Any, transcodings: dict[str, Transcoding]) -> Any:
    """Turn the typed values of parsed JSON back into objects, in place where it can."""
    if type(value) is dict:
        if len(value) == 2 and "_type_" in value and "_data_" in value:
            data = value["_data_"]
            if type(data) is dict or type(data) is list:
                data = revive(data, transcodings)
            return _transcoding(value["_type_"], transcodings).decode(data)
        for key, item in value.items():
            if type(item) is dict or type(item) is list:
                value[key] = revive(item, transcodings)
        return value
    if type(value) is list:
        return [revive(v, transcodings) if type(v) in (dict, list) else v for v in value]
    return value

"""Decoding events for projections without paying for fields nobody reads.

A rebuild reads millions of events and each view looks at a few fields of each. Parsing the
stored JSON with orjson and reviving a typed value (a datetime, a UUID) only when a view asks
for it reads the same events into objects of the same classes — singledispatch and isinstance
work unchanged — several times faster than the library's per-object decoding hook.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import orjson
from eventsourcing.persistence import Transcoding
from eventsourcing.utils import resolve_topic


class LazyFields:
    """Mixed into an event class: fields are revived from the stored state on first access."""

    _transcodings: ClassVar[dict[str, Transcoding]] = {}

    def __getattr__(self, name: str) -> Any:
        raw = self.__dict__.get("_raw")
        if raw is None or name not in raw:
            raise AttributeError(name)
        value = revive(raw[name], self._transcodings)
        self.__dict__[name] = value
        return value


_PLAIN = (str, int, float, bool, type(None))


_CLASSES: dict[str, type[Any]] = {}


def lazy_class(topic: str, transcodings: dict[str, Transcoding]) -> type[Any]:
    found = _CLASSES.get(topic)
    if found is None:
        cls = resolve_topic(topic)
        found = type(f"Lazy{cls.__name__}", (LazyFields, cls), {"_transcodings": transcodings})
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
    event = object.__new__(cls)
    raw = parse_state(state)
    fields = event.__dict__
    # Plain values need no reviving: only typed and nested ones wait for first access. A field
    # with a default is a class attribute, which __getattr__ would never be asked about: it is
    # revived now, or the default would be read instead of the stored value.
    fields.update(
        {
            k: v if type(v) in _PLAIN else revive(v, transcodings)
            for k, v in raw.items()
            if type(v) in _PLAIN or hasattr(cls, k)
        }
    )
    fields.update(_raw=raw, originator_id=originator_id, originator_version=version)
    return event


def parse_state(state: bytes) -> Any:
    """An event's stored JSON. Events written before NaN and huge integers were refused hold
    what orjson rejects; the standard parser still reads them, so they never stop a reader."""
    try:
        return orjson.loads(state)
    except orjson.JSONDecodeError:
        return json.loads(state)


def revive(value: Any, transcodings: dict[str, Transcoding]) -> Any:
    """Turn the typed values of parsed JSON back into objects, in place where it can."""
    if type(value) is dict:
        if len(value) == 2 and "_type_" in value and "_data_" in value:
            data = value["_data_"]
            if type(data) is dict or type(data) is list:
                data = revive(data, transcodings)
            return transcodings[value["_type_"]].decode(data)
        for key, item in value.items():
            if type(item) is dict or type(item) is list:
                value[key] = revive(item, transcodings)
        return value
    if type(value) is list:
        return [revive(v, transcodings) if type(v) in (dict, list) else v for v in value]
    return value

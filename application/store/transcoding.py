from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Transcoding, UUIDAsHex

from runledger.domain.values import UnsafeValue
from runledger.projections.lazy import parse_state, revive

MAX_EVENT_BYTES = 8 * 1024 * 1024

# A NUL the encoder escaped, not a backslash before the letters "u0000": an odd run of
# backslashes before them.
_ESCAPED_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


class FastJSONTranscoder(JSONTranscoder):
    """The library's JSON format, read with orjson, written only when every reader can read it.

    The stock reader calls back into Python for every object the parser meets; parsing in C and
    reviving only the typed values (``{"_type_": ..., "_data_": ...}``) afterwards reads the same
    bytes into the same objects faster. Writing, an event of plain values (``_flat``) goes
    through orjson to the very bytes the stock writer gives, and any other through the stock
    writer. That allows NaN, which the readers refuse, and NUL, which PostgreSQL text refuses:
    here neither is ever written. Services check values where they come in and say which field;
    this is the rule that makes a bad event impossible.
    """

    def __init__(self) -> None:
        super().__init__()
        self.encoder = json.JSONEncoder(
            default=self._encode_obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        self._iso: str | None = None
        self._hex: str | None = None

    def register(self, transcoding: Transcoding) -> None:
        super().register(transcoding)
        # The flat path writes moments and ids itself only while they are the library's own.
        found = self.types.get(datetime)
        self._iso = found.name if type(found) is DatetimeAsISO else None
        found = self.types.get(UUID)
        self._hex = found.name if type(found) is UUIDAsHex else None

    def encode(self, obj: Any) -> bytes:
        if type(obj) is dict:
            quick = self._quick(obj)
            if quick is not None:
                return self._bounded(quick)
            obj = self._typed_fields(obj)
        try:
            text = self.encoder.encode(obj)
        except ValueError as error:  # allow_nan=False
            raise UnsafeValue("an event", f"cannot be stored: {error}") from None
        try:
            data = text.encode("utf8")
        except UnicodeEncodeError:
            raise UnsafeValue("an event", "cannot be stored: a text has a lone surrogate") from None
        return self._bounded(data)

    def _quick(self, state: dict[str, Any]) -> bytes | None:
        """orjson's bytes for a flat state; None for the general path to write (or refuse)."""
        flat = self._flat(state)
        if flat is None:
            return None
        try:
            return orjson.dumps(flat)
        except orjson.JSONEncodeError:
            return None  # a lone surrogate, an integer past 64 bits: the general path says which

    def _flat(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """A state of text, whole numbers, flags, nulls, UTC moments and ids, ready for orjson,
        which writes it byte for byte as the library's encoder would, many times faster
        (scripts/MEASUREMENTS.md, "orjson for events of plain values"); None for any other
        state. Most events are such (a claim, a verdict, a step's dispatch), and none of their
        values can be NaN or hide one in a container. A float is left to the general path:
        orjson spells some of them otherwise (1e16 against 1e+16), and writes NaN as null."""
        iso, hexed = self._iso, self._hex
        flat: dict[str, Any] = {}
        for key, value in state.items():
            kind = type(value)
            if kind is str or kind is int or kind is bool or value is None:
                flat[key] = value
            elif kind is datetime and value.tzinfo is UTC and iso is not None:
                flat[key] = {"_type_": iso, "_data_": value}  # orjson writes its isoformat()
            elif kind is UUID and hexed is not None:
                flat[key] = {"_type_": hexed, "_data_": value.hex}
            else:
                return None
        return flat

    def _bounded(self, data: bytes) -> bytes:
        """The bytes, unless they hold a NUL or are too large to store."""
        # The plain search first: the regex tries its look-behind at every position of every
        # event, which was the sweep's single largest cost in its save (scripts/MEASUREMENTS.md,
        # "The NUL check's plain search first"); the search only finds a candidate.
        if b"\\u0000" in data and _ESCAPED_NUL.search(data):
            raise UnsafeValue("an event", "cannot be stored: a text contains the NUL character")
        if len(data) > MAX_EVENT_BYTES:
            raise UnsafeValue("an event", f"of {len(data):,} bytes is too large to store")
        return data

    def _typed_fields(self, state: dict[str, Any]) -> dict[str, Any]:
        """An event's own typed fields (its ids, its times) transcoded here, as ``_encode_obj``
        would: the same text, without the encoder calling back into Python for each of them."""
        types = self.types
        return {
            k: {"_type_": types[type(v)].name, "_data_": types[type(v)].encode(v)}
            if type(v) in types
            else v
            for k, v in state.items()
        }

    def _encode_obj(self, o: Any) -> dict[str, Any]:
        """A subclass of a registered type is stored as that type: freezegun's clock answers
        FakeDatetimes, which users' tests save, and the stock lookup is by exact type."""
        cls = type(o)
        if cls not in self.types:
            base = next((b for b in cls.__mro__[1:] if b in self.types), None)
            if base is not None:
                self.types[cls] = self.types[base]
        return super()._encode_obj(o)

    def decode(self, data: bytes) -> Any:
        return revive(parse_state(data), self.names)

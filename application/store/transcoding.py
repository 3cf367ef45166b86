from __future__ import annotations

import json
import re
from typing import Any

from eventsourcing.persistence import JSONTranscoder

from runledger.domain.values import UnsafeValue
from runledger.projections.lazy import parse_state, revive

MAX_EVENT_BYTES = 8 * 1024 * 1024

# A NUL the encoder escaped, not a backslash before the letters "u0000": an odd run of
# backslashes before them.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


class FastJSONTranscoder(JSONTranscoder):
    """The library's JSON format, read with orjson, written only when every reader can read it.

    The stock reader calls back into Python for every object the parser meets; parsing in C and
    reviving only the typed values (``{"_type_": ..., "_data_": ...}``) afterwards reads the same
    bytes into the same objects faster. The stock writer allows NaN, which the readers refuse,
    and NUL, which PostgreSQL text refuses: here neither is ever written. Services check values
    where they come in and say which field; this is the rule that makes a bad event impossible.
    """

    def __init__(self) -> None:
        super().__init__()
        self.encoder = json.JSONEncoder(
            default=self._encode_obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )

    def encode(self, obj: Any) -> bytes:
        if type(obj) is dict:
            obj = self._typed_fields(obj)
        try:
            text = self.encoder.encode(obj)
        except ValueError as error:  # allow_nan=False
            raise UnsafeValue("an event", f"cannot be stored: {error}") from None
        # The plain search first: the regex tries its look-behind at every position (~20 us an
        # event, the sweep's single largest cost in its save), the search only finds a candidate.
        if "\\u0000" in text and _ESCAPED_NUL.search(text):
            raise UnsafeValue("an event", "cannot be stored: a text contains the NUL character")
        try:
            data = text.encode("utf8")
        except UnicodeEncodeError:
            raise UnsafeValue("an event", "cannot be stored: a text has a lone surrogate") from None
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

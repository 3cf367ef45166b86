"""`--where KEY=VALUE`, repeated: a bulk cleanup's filter, read into the API's own Selector.
Anything wrong with one is a usage error naming its key."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import ValidationError

from runledger.application.cli.errors import Usage
from runledger.application.cli.options import moment
from runledger.application.display import safe_repr, safe_text
from runledger.application.reading.schemas.bulk import Selector
from runledger.domain.status import CleanupStatus
from runledger.domain.values import plain_message

KEYS = {
    "module": "module",
    "action": "action",
    "status": "run_status",
    "run_status": "run_status",
    "cleanup": "cleanup_status",
    "cleanup_status": "cleanup_status",
    "ended_after": "ended_after",
    "ended_before": "ended_before",
}
"""What a person may type, and the Selector field each names (the API's names work too)."""

CHOICES = {
    "run_status": ("completed", "cancelled", "aborted"),
    "cleanup_status": get_args(CleanupStatus),
}
TIMES = ("ended_after", "ended_before")

HELP = (
    "KEY=VALUE, repeatable, every one narrowing: module, action, status (completed, cancelled, "
    "aborted), cleanup (incomplete, pending, ...), ended_after, ended_before (ISO times, UTC "
    "unless they say otherwise)"
)


def selector(given: list[str]) -> Selector:
    """The Selector the --where options say, or Usage naming the key that is wrong."""
    fields: dict[str, Any] = {}
    typed: dict[str, str] = {}
    for text in given:
        key, value = _pair(text)
        field = KEYS[key]
        if field in fields:
            raise Usage(f"--where {key}: given twice; each key narrows once")
        fields[field], typed[field] = _value(key, field, value), key
    try:
        return Selector.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        key = typed.get(str(first["loc"][0]), str(first["loc"][0]))
        raise Usage(f"--where {key}: {safe_text(plain_message(first))}") from None


def _pair(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals:
        raise Usage(f"--where {safe_repr(text)}: expected KEY=VALUE, e.g. module=sandbox")
    if key not in KEYS:
        raise Usage(
            f"--where {safe_repr(key)}: not a key; the keys are "
            + ", ".join(k for k in KEYS if k not in ("run_status", "cleanup_status"))
        )
    return key, value


def _value(key: str, field: str, value: str) -> Any:
    if field in TIMES:
        return moment(f"--where {key}", value)
    if field in CHOICES and value not in CHOICES[field]:
        raise Usage(f"--where {key}: {safe_repr(value)} is not one of {', '.join(CHOICES[field])}")
    return value


def complete(incomplete: str) -> list[str]:
    """Shell completion for --where: the keys, then a key's choices."""
    key, equals, _ = incomplete.partition("=")
    if equals and KEYS.get(key) in CHOICES:
        found = [f"{key}={choice}" for choice in CHOICES[KEYS[key]]]
    else:
        found = [f"{k}=" for k in KEYS]
    return [one for one in found if one.startswith(incomplete)]

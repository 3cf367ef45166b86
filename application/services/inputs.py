"""What a person or a runner passes in by name, checked before anything is written."""

from __future__ import annotations

from runledger.application.errors import BadRequest
from runledger.domain.values import MAX_TEXT, check_text

MAX_NAME = 200


def person(by: str, asking: str) -> str:
    """The name of the person who asked, or BadRequest saying what needs it."""
    if isinstance(by, str) and not by.strip():
        raise BadRequest(f"{asking} needs the name of the person who asked")
    return check_text(by, "by", limit=MAX_NAME)


def worker_name(name: str) -> str:
    return check_text(name, "worker", limit=MAX_NAME, empty=False)


def reason(text: str) -> str:
    return check_text(text, "reason", limit=MAX_TEXT, empty=False)

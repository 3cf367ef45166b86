"""Stored events as the projector reads them, and what it says when one cannot be read."""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

from eventsourcing.persistence import Transcoding
from eventsourcing.utils import resolve_topic

from runledger.domain.text import safe_text
from runledger.domain.topics import old_topics
from runledger.projections.backend import Note
from runledger.projections.lazy import lazy_event

# Only runledger's own packages are imported to look a topic up: a topic in the store is data,
# and importing whatever module it names would run that module's code.
OWN_PACKAGES = ("runledger", "eventsourcing")


class UnknownTopic(Exception):
    """The event's topic names no event class this runledger knows."""


class Undecodable(Exception):
    """The event's stored state cannot be read back."""


def decode(note: Note, transcodings: dict[str, Transcoding]) -> Any:
    _, originator, version, topic, state = note
    try:
        return lazy_event(topic, originator, version, state, transcodings)
    except Exception as error:
        raise Undecodable(f"{type(error).__name__}: {safe_text(error, 240)}") from error


def require_known(topic: str) -> None:
    """Every event is read by some view or knowingly ignored: a topic nobody knows could be
    an event a view needed (a newer runledger's, or a damaged one), so it is never passed by."""
    if not known(topic):
        raise UnknownTopic(topic)


@cache
def known(topic: str) -> bool:
    if topic in old_topics():
        return True
    module = topic.partition(":")[0]
    if module.partition(".")[0] not in OWN_PACKAGES and module not in sys.modules:
        return False
    try:
        return isinstance(resolve_topic(topic), type)
    except Exception:  # any failure to find it means the same: nobody knows this topic
        return False


def reason(error: BaseException) -> str:
    """Why a view could not apply an event, in a few words."""
    if isinstance(error, UnknownTopic):
        return "its topic names no event class runledger knows"
    if isinstance(error, Undecodable):
        return f"its stored state cannot be decoded ({error})"
    return f"{type(error).__name__}: {safe_text(error, 240)}"

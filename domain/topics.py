"""The topics stored events name their classes by, old and new.

Until 0.1 the domain was the top-level package ``domain``, so a store written then names
``domain.resource:Resource.Reverted`` where today's names ``runledger.domain.resource:...``.
Both resolve to the same class, and a view reads an event stored under either.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from functools import cache
from typing import Any

from eventsourcing.domain import Aggregate, DomainEvent
from eventsourcing.utils import get_topic, register_topic

PACKAGE = __name__.rpartition(".")[0]
OLD_PACKAGE = "domain"


def stored_classes() -> Iterator[type[Any]]:
    """Every aggregate class of the domain and every event class nested in one."""
    package = importlib.import_module(PACKAGE)
    for module in pkgutil.iter_modules(package.__path__, f"{PACKAGE}."):
        for value in vars(importlib.import_module(module.name)).values():
            if (
                isinstance(value, type)
                and issubclass(value, Aggregate)
                and value.__module__ == module.name
            ):
                yield value
                yield from _events(value)


def _events(cls: type[Any]) -> Iterator[type[Any]]:
    for value in vars(cls).values():
        if (
            isinstance(value, type)
            and issubclass(value, DomainEvent)
            and value.__qualname__.startswith(f"{cls.__qualname__}.")
        ):
            yield value
            yield from _events(value)


def old_topic(cls: type[Any]) -> str:
    module, _, name = get_topic(cls).partition(":")
    return f"{OLD_PACKAGE}{module.removeprefix(PACKAGE)}:{name}"


def topics_of(cls: type[Any]) -> frozenset[str]:
    """Every topic an event of this class may be stored under."""
    return frozenset({get_topic(cls), old_topic(cls)})


@cache
def old_topics() -> dict[str, type[Any]]:
    return {old_topic(cls): cls for cls in stored_classes()}


@cache
def register_old_topics() -> None:
    """Make the topics of a store written before the move resolve to today's classes."""
    for topic, cls in old_topics().items():
        register_topic(topic, cls)

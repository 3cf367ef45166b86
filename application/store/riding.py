"""A record that rides in the first save of a call: an idempotency key's record is written in
the same transaction as the first change its request makes, so the two exist together or not at
all, and of two requests racing under one key the store lets exactly one change anything.

The rider is the calling context's (a ContextVar): saves made by other threads meanwhile (a
runner's tick, a module's late answer) never carry it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from eventsourcing.domain import Aggregate

T = TypeVar("T")


@dataclass
class Rider:
    make: Callable[[], Aggregate]
    """A fresh record each time a save is tried: a failed save has collected its events."""
    saved: Aggregate | None = None


_RIDER: ContextVar[Rider | None] = ContextVar("runledger_rider", default=None)


@contextmanager
def riding(rider: Rider) -> Iterator[Rider]:
    """The saves made inside carry ``rider``'s record, the first one that writes anything."""
    token = _RIDER.set(rider)
    try:
        yield rider
    finally:
        _RIDER.reset(token)


def with_rider(save: Callable[[tuple[Any, ...]], T], objs: tuple[Any, ...]) -> T:
    """``save(objs)``, with the rider's record added when this is the first save that writes."""
    rider = _RIDER.get()
    if rider is None or rider.saved is not None or not any(_pending(o) for o in objs):
        return save(objs)
    record = rider.make()
    done = save((*objs, record))
    rider.saved = record
    return done


def _pending(obj: Any) -> bool:
    return bool(getattr(obj, "pending_events", True))

"""Saving aggregates without the library's runtime Protocol checks on every object.

eventsourcing 9.5's ``Application.save`` collects events through
``ProcessingEvent.collect_events``, which asks ``isinstance(obj, DomainEventProtocol)`` and then
``isinstance(obj, CollectEventsProtocol)`` of each object. Both are runtime-checkable Protocols:
each such ``isinstance`` walks every attribute the Protocol names, for every aggregate: a good
part of a sweep's save (scripts/MEASUREMENTS.md, "Saving without runtime Protocol checks").
Every aggregate runledger saves is an eventsourcing aggregate, and its class answers both
questions at once; anything else is collected the library's way.

``save`` below is the library's ``Application.save`` with that one step replaced.
tests/application/test_saving.py holds the library's text it was copied from and fails when the
installed
library's differs: then compare the two again before changing the pinned text.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.application import Application, ProcessingEvent
from eventsourcing.domain import BaseAggregate
from eventsourcing.persistence import Recording


def collect(processing: ProcessingEvent[UUID], objs: tuple[Any, ...]) -> None:
    """What ``processing.collect_events(*objs)`` does, in the same order."""
    for obj in objs:
        if isinstance(obj, BaseAggregate):
            processing.events.extend(obj.collect_events())
            processing.aggregates[obj.id] = obj
        else:
            processing.collect_events(obj)


def save(
    app: Application[UUID], objs: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[Recording[UUID]]:
    processing: ProcessingEvent[UUID] = ProcessingEvent()
    collect(processing, objs)
    processing.saved_kwargs.update(kwargs)
    recordings = app._record(processing)
    app._take_snapshots(processing)
    app._notify(recordings)
    app.notify(processing.events)  # deprecated in the library, still called by its save
    return recordings

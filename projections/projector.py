from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder

from projections.backend import Backend, Cursor
from projections.lazy import lazy_event
from projections.schema import create_tables
from projections.views import Event, ResourcesView, RunLogView, RunsView, StepsView

PAGE = 2_000
Progress = Callable[[int, int], None]
"""Told (events read in this page, position reached) after every page."""


class View(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def table(self) -> str: ...

    def topics(self) -> frozenset[str]: ...

    def process(
        self, backend: Backend, cursor: Cursor, events: Sequence[tuple[int, Event]]
    ) -> None: ...


def all_views() -> list[View]:
    return [RunsView(), ResourcesView(), StepsView(), RunLogView()]


class Projector:
    """Keeps the views level with the store, a page per transaction, exactly once.

    Each view's rows and its tracking position commit together. The first statement of every
    page locks the tracking rows, so projectors in several processes take turns instead of
    applying one page twice.
    """

    def __init__(
        self, app: Application[Any], backend: Backend, views: list[View] | None = None,
        page: int | None = None,
    ) -> None:
        self.app = app
        self.backend = backend
        self.views = views if views is not None else all_views()
        self.page = page
        transcoder: Any = app.mapper.transcoder
        self.transcodings = transcoder.names

    @property
    def recorder(self) -> ApplicationRecorder:
        recorder = self.app.recorder
        assert isinstance(recorder, ApplicationRecorder)
        return recorder

    def create_tables(self) -> None:
        create_tables(self.backend, [v.name for v in self.views])

    def positions(self) -> dict[str, int]:
        with self.backend.transaction(commit=False) as cursor:
            cursor.execute(self.backend.sql("SELECT name, position FROM {rl_tracking}"))
            return {row["name"]: int(row["position"]) for row in cursor.fetchall()}

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply everything the store holds now; answers the lowest position reached."""
        while True:
            with self.backend.transaction(commit=True) as cursor:
                count, reached = self.advance(cursor)
            if progress is not None and count:
                progress(count, reached)
            if count < (self.page or PAGE):
                return reached

    def catch_up_in(self, cursor: Cursor) -> int:
        """The same, inside a transaction the caller holds (a rebuild's swap)."""
        while True:
            count, reached = self.advance(cursor)
            if count < (self.page or PAGE):
                return reached

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        """Return once every view has processed the store up to ``position``."""
        deadline = time.monotonic() + timeout
        while self.catch_up() < position:
            if time.monotonic() > deadline:
                raise TimeoutError(f"projections did not reach position {position}")
            time.sleep(0.02)

    def advance(self, cursor: Cursor) -> tuple[int, int]:
        """Apply one page after the lowest position; answers (events read, position reached)."""
        positions = self._lock(cursor)
        start = min(positions.values())
        notes = self.backend.select_page(start, self.page or PAGE)
        if not notes:
            return 0, start
        decoded: dict[int, Event] = {}
        for view in self.views:
            after, topics = positions[view.name], view.topics()
            page: list[tuple[int, Event]] = []
            for position, originator, version, topic, state in notes:
                if position > after and topic in topics:
                    if position not in decoded:
                        decoded[position] = lazy_event(
                            topic, originator, version, state, self.transcodings
                        )
                    page.append((position, decoded[position]))
            view.process(self.backend, cursor, page)
        last = notes[-1][0]
        names = [v.name for v in self.views]
        cursor.execute(
            self.backend.sql(
                "UPDATE {rl_tracking} SET position = %s "
                f"WHERE position < %s AND name IN ({self.backend.markers(len(names))})"
            ),
            [last, last, *names],
        )
        return len(notes), last

    def _lock(self, cursor: Cursor) -> dict[str, int]:
        names = [v.name for v in self.views]
        where = f"name IN ({self.backend.markers(len(names))})"
        cursor.execute(
            self.backend.sql(f"UPDATE {{rl_tracking}} SET position = position WHERE {where}"),
            names,
        )
        cursor.execute(
            self.backend.sql(f"SELECT name, position FROM {{rl_tracking}} WHERE {where}"), names
        )
        return {row["name"]: int(row["position"]) for row in cursor.fetchall()}

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder

from projections.backend import Backend, Cursor
from projections.schema import create_tables
from projections.views import Event, ResourcesView, RunLogView, RunsView, StepsView

PAGE = 2_000


class View(Protocol):
    @property
    def name(self) -> str: ...

    def topics(self) -> set[str]: ...

    def process(
        self, backend: Backend, cursor: Cursor, events: Sequence[tuple[int, Event]]
    ) -> None: ...


class Projector:
    """Keeps the views level with the store, a page per transaction, exactly once.

    Each view's rows and its tracking position commit together. The first statement of every
    page locks the tracking rows, so projectors in several processes take turns instead of
    applying one page twice.
    """

    def __init__(self, app: Application[Any], backend: Backend) -> None:
        self.app = app
        self.backend = backend
        self.views: list[View] = [RunsView(), ResourcesView(), StepsView(), RunLogView()]

    @property
    def recorder(self) -> ApplicationRecorder:
        recorder = self.app.recorder
        assert isinstance(recorder, ApplicationRecorder)
        return recorder

    def create_tables(self) -> None:
        create_tables(self.backend, [v.name for v in self.views])

    def rebuild(self) -> int:
        """Empty every view and replay the store from position zero."""
        with self.backend.transaction(commit=True) as cursor:
            self._lock(cursor)
            for table in ("rl_runs", "rl_resources", "rl_steps", "rl_run_log"):
                cursor.execute(self.backend.sql(f"DELETE FROM {{{table}}}"))
            cursor.execute(self.backend.sql("UPDATE {rl_tracking} SET position = 0"))
        return self.catch_up()

    def positions(self) -> dict[str, int]:
        with self.backend.transaction(commit=False) as cursor:
            cursor.execute(self.backend.sql("SELECT name, position FROM {rl_tracking}"))
            return {row["name"]: int(row["position"]) for row in cursor.fetchall()}

    def catch_up(self) -> int:
        """Apply everything the store holds now; answers the lowest position reached."""
        while True:
            count, reached = self._page()
            if count < PAGE:
                return reached

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        """Return once every view has processed the store up to ``position``."""
        deadline = time.monotonic() + timeout
        while self.catch_up() < position:
            if time.monotonic() > deadline:
                raise TimeoutError(f"projections did not reach position {position}")
            time.sleep(0.02)

    def _page(self) -> tuple[int, int]:
        with self.backend.transaction(commit=True) as cursor:
            positions = self._lock(cursor)
            start = min(positions.values())
            notes = self.recorder.select_notifications(
                start=start, limit=PAGE, inclusive_of_start=False
            )
            if not notes:
                return 0, start
            mapper = self.app.mapper
            wanted = {view.name: view.topics() for view in self.views}
            decoded: dict[int, Event] = {}
            for view in self.views:
                after, topics = positions[view.name], wanted[view.name]
                page: list[tuple[int, Event]] = []
                for note in notes:
                    if note.id > after and note.topic in topics:
                        if note.id not in decoded:
                            decoded[note.id] = mapper.to_domain_event(note)
                        page.append((note.id, decoded[note.id]))
                view.process(self.backend, cursor, page)
            last = notes[-1].id
            cursor.execute(
                self.backend.sql("UPDATE {rl_tracking} SET position = %s WHERE position < %s"),
                [last, last],
            )
            return len(notes), last

    def _lock(self, cursor: Cursor) -> dict[str, int]:
        cursor.execute(self.backend.sql("UPDATE {rl_tracking} SET position = position"))
        cursor.execute(self.backend.sql("SELECT name, position FROM {rl_tracking}"))
        return {row["name"]: int(row["position"]) for row in cursor.fetchall()}

"""Home-made beside the library's ProjectionRunner, which commits once per event: a page per
transaction projects the same rows many times faster (scripts/MEASUREMENTS.md, "Home-made
projector: a page per transaction")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import ApplicationRecorder

from runledger.projections import tracking
from runledger.projections.applier import Applier, PageFailed, Peek
from runledger.projections.backend import Backend, Cursor
from runledger.projections.errors import CannotCatchUp, ProjectionStuck, Stuck
from runledger.projections.schema import create_tables
from runledger.projections.views.base import RowView
from runledger.projections.views.catalog import View, all_views

PAGE = 2_000
Progress = Callable[[int, int], None]
"""Told (events read in this page, position reached) after every page."""


class Projector:
    """Keeps the views level with the store, a page per transaction, exactly once.

    Each view's rows and its tracking position commit together. A catch-up first reads, without
    locking, whether there is anything new: with nothing new it writes nothing. With work, the
    first statement of every page locks the tracking rows, so projectors in several processes
    take turns instead of applying one page twice.

    A view that cannot apply an event stops just before it, having applied everything before;
    the other views go on past it. The catch-up then raises ProjectionStuck: which view, which
    event, why. It is never skipped: the view waits there until the event is repaired (this
    projector checks the stored event again on every catch-up, by reading it).
    """

    def __init__(
        self,
        app: Application[Any],
        backend: Backend,
        views: list[View] | None = None,
        page: int | None = None,
    ) -> None:
        self.app = app
        self.backend = backend
        self.views = views if views is not None else all_views()
        self.page = page or PAGE
        self.applier = self._applier()
        self.stuck = self.applier.stuck
        self._one_at_a_time = threading.Lock()

    @property
    def recorder(self) -> ApplicationRecorder:
        recorder = self.app.recorder
        assert isinstance(recorder, ApplicationRecorder)
        return recorder

    def _applier(self) -> Applier:
        transcoder: Any = self.app.mapper.transcoder
        topics = frozenset[str]().union(*(v.topics() for v in self.views))
        return Applier(self.backend, self.page, transcoder.names, topics)

    def seen(self, table: str, rows: list[Any]) -> None:
        """Whole rows of a view's table read elsewhere: its next page may fold from them."""
        for view in self.views:
            if view.table == table and isinstance(view, RowView):
                view.known.read(view.key, rows)

    def create_tables(self, cursor: Cursor) -> None:
        create_tables(self.backend, cursor, [v.name for v in self.views])

    def positions(self) -> dict[str, int]:
        return tracking.positions(self.backend)

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply everything the store holds now; answers the lowest position reached.

        One thread of a process catches up at a time: the API's request threads all read fresh,
        and a second catch-up at once would only wait on the store's write lock for the same
        page (on SQLite, for seconds)."""
        with self._one_at_a_time:
            return self._catch_up(progress)

    def _catch_up(self, progress: Progress | None) -> int:
        live, reached, peeked = self._pending()
        try:
            while live:
                count, reached = self._page(live, peeked)
                peeked = None
                if progress is not None and count:
                    progress(count, reached)
                live = [v for v in live if v.name not in self.stuck]
                if count < self.page:
                    break
        except Exception as error:
            if self.backend.read_only(error):
                raise CannotCatchUp(self.behind(), error) from None
            raise
        if self.stuck:
            raise ProjectionStuck(list(self.stuck.values()))
        return reached

    def catch_up_in(self, cursor: Cursor) -> int:
        """The same, inside a transaction the caller holds (a rebuild's swap)."""
        while True:
            try:
                with self.backend.savepoint(cursor, "rl_page"):
                    count, reached = self.applier.advance(cursor, self.views)
            except PageFailed:
                count, reached = self.applier.advance(cursor, self.views, careful=True)
            if self.stuck:
                raise ProjectionStuck(list(self.stuck.values()))
            if count < self.page:
                return reached

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        """Return once every view has processed the store up to ``position``."""
        deadline = time.monotonic() + timeout
        while self.catch_up() < position:
            if time.monotonic() > deadline:
                raise TimeoutError(f"projections did not reach position {position}")
            time.sleep(0.02)

    def head(self) -> int:
        """The store's last position."""
        return self.recorder.max_notification_id() or 0

    def reached(self) -> int:
        """The position every view has passed (0 for a view not yet tracked)."""
        mine = self._positions()
        return min((mine.get(v.name, 0) for v in self.views), default=0)

    def behind(self) -> int:
        """How many positions the furthest-behind view has still to read."""
        head = self.recorder.max_notification_id() or 0
        mine = self._positions()
        return max(head - min(mine.values(), default=head), 0)

    def trial(self) -> list[Stuck]:
        """Where each view would stop, found by applying what is pending in a transaction that
        is then rolled back: nothing is written, and this projector's memory is untouched."""
        trying = self._applier()
        live = list(self.views)
        with self.backend.transaction(commit=False) as cursor:
            while live:
                count, _ = trying.advance(cursor, live, careful=True)
                live = [v for v in live if v.name not in trying.stuck]
                if count < self.page:
                    break
        return list(trying.stuck.values())

    def _pending(self) -> tuple[list[View], int, Peek | None]:
        """The views with something new to read and the first page, found by one read."""
        if self.stuck:
            self.applier.forget_repaired(self._positions())
        going = [v for v in self.views if v.name not in self.stuck]
        if not going:
            return [], 0, None
        start, notes = self.backend.peek([v.name for v in going], self.page)
        return (going if notes else []), start, (start, notes)

    def _positions(self) -> dict[str, int]:
        names = {v.name for v in self.views}
        return {n: p for n, p in self.positions().items() if n in names}

    def _page(self, views: list[View], peeked: Peek | None) -> tuple[int, int]:
        try:
            with self.backend.transaction(commit=True) as cursor:
                return self.applier.advance(cursor, views, peeked=peeked)
        except PageFailed:
            with self.backend.transaction(commit=True) as cursor:
                return self.applier.advance(cursor, views, careful=True, peeked=peeked)

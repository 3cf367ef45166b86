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
from runledger.projections.backend import Backend, Cursor, Note
from runledger.projections.errors import CannotCatchUp, ProjectionStuck, Stuck
from runledger.projections.schema import create_tables
from runledger.projections.stored import decode, reason, require_known
from runledger.projections.views.base import Event, RowView
from runledger.projections.views.catalog import View, all_views

PAGE = 2_000
Progress = Callable[[int, int], None]
"""Told (events read in this page, position reached) after every page."""


Peek = tuple[int, list[Note]]
"""A page read before the lock: (the lowest position it was read after, its events)."""


class _PageFailed(Exception):
    """A view raised on this page: roll it back, then apply it again event by event."""


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
        transcoder: Any = app.mapper.transcoder
        self.transcodings = transcoder.names
        self.stuck: dict[str, Stuck] = {}
        self._one_at_a_time = threading.Lock()
        self._topics = frozenset().union(*(v.topics() for v in self.views))

    @property
    def recorder(self) -> ApplicationRecorder:
        recorder = self.app.recorder
        assert isinstance(recorder, ApplicationRecorder)
        return recorder

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
                    count, reached = self._advance(cursor, self.views)
            except _PageFailed:
                count, reached = self._advance(cursor, self.views, careful=True)
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

    def behind(self) -> int:
        """How many positions the furthest-behind view has still to read."""
        head = self.recorder.max_notification_id() or 0
        mine = self._positions()
        return max(head - min(mine.values(), default=head), 0)

    def trial(self) -> list[Stuck]:
        """Where each view would stop, found by applying what is pending in a transaction that
        is then rolled back: nothing is written, and this projector's memory is untouched."""
        trying = Projector(self.app, self.backend, self.views, self.page)
        live = list(self.views)
        with self.backend.transaction(commit=False) as cursor:
            while live:
                count, _ = trying._advance(cursor, live, careful=True)
                live = [v for v in live if v.name not in trying.stuck]
                if count < self.page:
                    break
        return list(trying.stuck.values())

    def _pending(self) -> tuple[list[View], int, Peek | None]:
        """The views with something new to read and the first page, found by one read."""
        if self.stuck:
            self._forget_repaired(self._positions())
        going = [v for v in self.views if v.name not in self.stuck]
        if not going:
            return [], 0, None
        start, notes = self.backend.peek([v.name for v in going], self.page)
        return (going if notes else []), start, (start, notes)

    def _forget_repaired(self, positions: dict[str, int]) -> None:
        """A stuck view is tried again once it moved (a rebuild) or its event changed."""
        for name, stuck in list(self.stuck.items()):
            found = self.backend.select_page(stuck.position - 1, 1)
            same = (
                bool(found)
                and found[0][0] == stuck.position
                and (found[0][3], found[0][4]) == (stuck.topic, stuck.state)
            )
            if positions.get(name) != stuck.position - 1 or not same:
                del self.stuck[name]

    def _positions(self) -> dict[str, int]:
        names = {v.name for v in self.views}
        return {n: p for n, p in self.positions().items() if n in names}

    def _page(self, views: list[View], peeked: Peek | None) -> tuple[int, int]:
        try:
            with self.backend.transaction(commit=True) as cursor:
                return self._advance(cursor, views, peeked=peeked)
        except _PageFailed:
            with self.backend.transaction(commit=True) as cursor:
                return self._advance(cursor, views, careful=True, peeked=peeked)

    def _advance(
        self,
        cursor: Cursor,
        views: list[View],
        *,
        careful: bool = False,
        peeked: Peek | None = None,
    ) -> tuple[int, int]:
        """Apply one page after the lowest position; answers (events read, position reached).

        A page peeked before the lock is used when the lock finds the views where the peek did:
        the library commits events in position order, so that page has not changed since.
        """
        positions = tracking.lock(self.backend, cursor, [v.name for v in views])
        start = min(positions.values())
        if peeked is not None and peeked[0] == start:
            notes = peeked[1]
        else:
            notes = self.backend.select_page(start, self.page)
        if not notes:
            return 0, start
        last = notes[-1][0]
        if careful:
            reached = {v.name: self._carefully(cursor, v, notes, positions[v.name]) for v in views}
        else:
            try:
                self._apply(cursor, views, notes, positions)
            except Exception as error:
                if self.backend.blames_event(error):
                    raise _PageFailed from error
                raise
            reached = {v.name: last for v in views}
        tracking.track(self.backend, cursor, reached)
        return len(notes), min(reached.values())

    def _apply(
        self, cursor: Cursor, views: list[View], notes: list[Note], positions: dict[str, int]
    ) -> None:
        decoded: dict[int, Event] = {}
        for note in notes:
            if note[3] not in self._topics:
                require_known(note[3])
        for view in views:
            after, topics = positions[view.name], view.topics()
            page: list[tuple[int, Event]] = []
            for note in notes:
                if note[0] > after and note[3] in topics:
                    if note[0] not in decoded:
                        decoded[note[0]] = decode(note, self.transcodings)
                    page.append((note[0], decoded[note[0]]))
            view.process(self.backend, cursor, page)

    def _carefully(self, cursor: Cursor, view: View, notes: list[Note], after: int) -> int:
        """Apply this view's part of a page that failed, in savepoints: all of it if it goes,
        else event by event up to the one that fails, which is where the view stays."""
        topics = view.topics()
        mine = [n for n in notes if n[0] > after and (n[3] in topics or n[3] not in self._topics)]
        try:
            with self.backend.savepoint(cursor, "rl_view"):
                view.process(self.backend, cursor, self._events(mine, topics))
            return notes[-1][0]
        except Exception as error:
            if not self.backend.blames_event(error):
                raise
        for note in mine:
            try:
                with self.backend.savepoint(cursor, "rl_event"):
                    view.process(self.backend, cursor, self._events([note], topics))
            except Exception as error:
                if not self.backend.blames_event(error):
                    raise
                position, originator, version, topic, state = note
                self.stuck[view.name] = Stuck(
                    view.name, position, topic, originator, version, reason(error), state
                )
                return position - 1
        return notes[-1][0]

    def _events(self, notes: list[Note], topics: frozenset[str]) -> list[tuple[int, Event]]:
        """Fresh copies for each view: reviving a field rewrites the parsed state in place."""
        found: list[tuple[int, Event]] = []
        for note in notes:
            if note[3] in topics:
                found.append((note[0], decode(note, self.transcodings)))
            else:
                require_known(note[3])
        return found

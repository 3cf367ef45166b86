"""One page of the store's events applied to the views, in a transaction the caller holds: the
projector's step, and where each view stuck."""

from __future__ import annotations

from eventsourcing.persistence import Transcoding

from runledger.projections import tracking
from runledger.projections.backend import Backend, Cursor, Note
from runledger.projections.errors import Stuck
from runledger.projections.stored import decode, reason, require_known
from runledger.projections.views.base import Event
from runledger.projections.views.catalog import View

Peek = tuple[int, list[Note]]
"""A page read before the lock: (the lowest position it was read after, its events)."""


class PageFailed(Exception):
    """A view raised on this page: roll it back, then apply it again event by event."""


class Applier:
    """Applies a page after the views' lowest position and moves their tracking rows with it.

    A view that cannot apply an event is left just before it, in ``stuck``: the first event it
    cannot apply, and why. The other views go on past it.
    """

    def __init__(
        self,
        backend: Backend,
        page: int,
        transcodings: dict[str, Transcoding],
        topics: frozenset[str],
    ) -> None:
        self.backend = backend
        self.page = page
        self.transcodings = transcodings
        self.topics = topics
        """Every topic some view reads: any other is checked to be knowingly ignored."""
        self.stuck: dict[str, Stuck] = {}

    def advance(
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
                    raise PageFailed from error
                raise
            reached = {v.name: last for v in views}
        tracking.track(self.backend, cursor, reached)
        return len(notes), min(reached.values())

    def forget_repaired(self, positions: dict[str, int]) -> None:
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

    def _apply(
        self, cursor: Cursor, views: list[View], notes: list[Note], positions: dict[str, int]
    ) -> None:
        decoded: dict[int, Event] = {}
        for note in notes:
            if note[3] not in self.topics:
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
        mine = [n for n in notes if n[0] > after and (n[3] in topics or n[3] not in self.topics)]
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

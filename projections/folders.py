"""What a rebuild keeps of each view in memory: its rows (or the run log's lines), folded from
the events, until they are written out. ``fold.py`` drives them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runledger.projections.backend import Backend, Cursor, Note
from runledger.projections.views.base import Event, Row, RowView, cells
from runledger.projections.views.run_log import RunLogView

Apply = Callable[[Any, Row | None], Row]


@dataclass
class Spill:
    """Rows to write out, as cells: ``fresh`` ones no row of the table has the key of, and
    ``again`` those it holds already (written out once, then moved again)."""

    table: str
    columns: Sequence[str]
    key: str
    fresh: list[list[Any]] = field(default_factory=list)
    again: list[list[Any]] = field(default_factory=list)

    def write(self, backend: Backend, cursor: Cursor) -> None:
        if self.fresh:
            backend.insert(cursor, self.table, self.columns, self.fresh)
        if self.again:
            backend.upsert(cursor, self.table, self.columns, self.key, self.again)


class RowFolder:
    """One row view's rows, folded in memory, the one moved last kept last."""

    def __init__(self, view: RowView) -> None:
        self.view = view
        self.topics = view.topics()
        self.apply: Any = type(view).apply
        self.rows: dict[str, Row] = {}
        self.stored: set[str] = set()
        """Kept rows the table holds too: written out, then read back."""

    def __len__(self) -> int:
        return len(self.rows)

    def read_back(self, backend: Backend, cursor: Cursor, keys: list[str]) -> None:
        found = self.view.load(backend, cursor, keys)
        self.rows.update(found)
        self.stored.update(found)

    def applying(self, cls: type[Any]) -> Apply:
        """The view's function for events of this class: singledispatch's lookup, done once."""
        found: Apply = self.apply.dispatch(cls)
        return found

    def spill(self, count: int) -> Spill:
        """The ``count`` rows moved longest ago (dicts keep insertion order), let go."""
        view = self.view
        spill = Spill(view.table, view.columns, view.key)
        for key in list(self.rows)[:count]:
            row = view.stored(self.rows.pop(key))
            if key in self.stored:
                self.stored.discard(key)
                spill.again.append(row)
            else:
                spill.fresh.append(row)
        return spill


class LineFolder:
    """The run log: a line per event, keyed by its position, written out with its page."""

    columns = ("position", "run_id", "at", "kind", "detail")

    def __init__(self, view: RunLogView) -> None:
        self.view = view
        self.topics = view.topics()
        self.lines: list[list[Any]] = []

    def __len__(self) -> int:
        return 0

    def read_back(self, backend: Backend, cursor: Cursor, keys: list[str]) -> None:
        """Lines are never read back: each is written once."""

    def fold(self, position: int, event: Event) -> None:
        self.lines.append(cells([position, *self.view.line(event)]))

    def spill(self, count: int) -> Spill:
        spill = Spill(self.view.table, self.columns, "position", fresh=self.lines)
        self.lines = []
        return spill


Folder = RowFolder | LineFolder


def folders(views: Sequence[Any]) -> list[Folder]:
    found: list[Folder] = []
    for view in views:
        if isinstance(view, RowView):
            found.append(RowFolder(view))
        elif isinstance(view, RunLogView):
            found.append(LineFolder(view))
        else:
            raise TypeError(f"a rebuild cannot fold the {view.name} view")
    return found


def written_out(
    reading: dict[str, list[RowFolder]], notes: Sequence[Note]
) -> dict[RowFolder, list[str]]:
    """The rows this page moves that their folder wrote out before: they are read back before
    the page is folded. A row starts at its aggregate's first event (version 1): if that is in
    the page, the row was never written."""
    # Each aggregate's first event this page that some view reads (the earliest one wins,
    # being written last).
    first = {note[1]: note for note in reversed(notes) if note[3] in reading}
    wanted: dict[RowFolder, list[str]] = {}
    for originator, (_, _, version, topic, _) in first.items():
        if version > 1:
            for folder in reading[topic]:
                if originator not in folder.rows:
                    wanted.setdefault(folder, []).append(originator)
    return wanted

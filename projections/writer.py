"""A rebuild's writes, on a thread of their own: PostgreSQL takes one page's rows (COPY, then
the commit) while the replay folds the next. psycopg waits for the server without the
interpreter lock, so the server's work overlaps the replay's on a second core.

On SQLite the writes stay on the replay's thread (``aside=False``): sqlite3 gives the lock back
and takes it again for every row it inserts, and the two threads took turns rather than
overlapping: no gain (scripts/MEASUREMENTS.md, "Rebuild writes aside on PostgreSQL only")."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

Write = Callable[[], None]


class Writer:
    """Writes handed over one at a time, in order; at most one waits while one is written, so
    memory stays that of two pages' rows. A write that fails is raised by the next ``put`` or
    ``wait``, and nothing after it is written. Leaving the block waits for the write under way:
    no write outlives the replay that asked for it."""

    def __init__(self, *, aside: bool = True) -> None:
        self.aside = aside
        self._waiting: queue.Queue[Write | None] = queue.Queue(maxsize=1)
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rebuild-writer", daemon=True)

    def __enter__(self) -> Writer:
        if self.aside:
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.aside:
            self._waiting.put(None)
            self._thread.join()

    def put(self, write: Write) -> None:
        if not self.aside:
            write()
            return
        self._raise()
        self._waiting.put(write)

    def wait(self) -> None:
        """Return once everything handed over is written, or raise what writing it raised."""
        if self.aside:
            self._waiting.join()
            self._raise()

    def _raise(self) -> None:
        if self._failed is not None:
            raise self._failed

    def _run(self) -> None:
        while True:
            write = self._waiting.get()
            try:
                if write is None:
                    return
                if self._failed is None:
                    write()
            except BaseException as error:  # handed to the replay's thread, which raises it
                self._failed = error
            finally:
                self._waiting.task_done()


def writing(write: Callable[..., None], *args: Any) -> Write:
    return lambda: write(*args)

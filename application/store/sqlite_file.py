"""The SQLite file under the store: refused when it is not there or damaged, opened read-only
when it cannot be written, and initialised by one process at a time."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from runledger.application.errors import NotInitialised, StoreCorrupt, StoreUnavailable
from runledger.application.store import outage_sqlite
from runledger.application.store.url import StoreConfig
from runledger.domain.text import safe_text
from runledger.projections.backend import Backend
from runledger.projections.sqlite import SQLiteBackend


@contextmanager
def file_lock(path: Path, timeout_s: float = 120.0) -> Iterator[None]:
    """Inits of one SQLite file take turns. Its first connections switch the file to WAL, and
    SQLite can answer "database is locked" to a second process doing so at the same moment,
    whatever its busy timeout. flock is separate from SQLite's own POSIX locks on the file, and
    an empty file is an empty database, so creating it here changes nothing."""
    with open(path, "ab") as held:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreUnavailable(
                        f"another `runledger init` held {path} for over {timeout_s:g}s"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def refuse_no_file(config: StoreConfig) -> None:
    """Only `runledger init` makes the store's file: any other command on a path with nothing
    there (a typo in the URL, most often) would leave an empty file behind."""
    if not Path(config.env["SQLITE_DBNAME"]).exists():
        raise NotInitialised(
            f"the {config.display} does not exist: run `runledger init` to create it, "
            "or check RUNLEDGER_DATABASE_URL"
        )


def refuse_damaged(backend: Backend, config: StoreConfig) -> None:
    """An SQLite file whose pages are damaged is refused before anything is written into it:
    a write may land on pages that are whole, and only a later read would find the damage.
    quick_check reads every page once, so it takes time in proportion to the file's size
    (scripts/MEASUREMENTS.md, "quick_check before an SQLite file is written to").

    A whole file is then watched: its outages are said once when they start and once when they
    end (store/outage_sqlite.py). This is where every opening of an SQLite file passes with its
    datastore, as PostgreSQL's passes store/bounds.py."""
    if not isinstance(backend, SQLiteBackend):
        return
    with backend.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA quick_check(1)")
        row = cursor.fetchone()
    found = str(row[0]) if row else "ok"
    if found != "ok":
        said = found.removeprefix("*** in database main ***").strip().splitlines() or [found]
        raise StoreCorrupt(
            f"the {config.display} is damaged (corrupted): {safe_text(said[0], 240)}; "
            "nothing was written (restore it from a backup)"
        )
    outage_sqlite.watch(backend.datastore, config.display, config.env["SQLITE_DBNAME"])


def sqlite_name(path: str) -> str:
    """The file's name, or a read-only URI when the file or its folder cannot be written.

    os.access asks the kernel, so an immutable file (chattr +i) or a read-only mount counts
    even for root. In WAL mode SQLite needs -wal and -shm files beside the database: without a
    writable folder to make them in, only immutable=1 reads it, and that is safe only while no
    -wal file exists (a writer could not have created one either).
    """
    file = Path(path)
    folder = file.parent
    if not file.exists() or (os.access(file, os.W_OK) and os.access(folder, os.W_OK)):
        return path
    uri = f"file:{quote(str(file.resolve()))}?mode=ro"
    wal = file.with_name(file.name + "-wal")
    if not os.access(folder, os.W_OK) and not wal.exists():
        uri += "&immutable=1"
    return uri

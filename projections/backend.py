from __future__ import annotations

import copy
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from typing import Any, ClassVar, Protocol
from uuid import UUID

from eventsourcing.persistence import PersistenceError, StoredEvent

log = logging.getLogger("runledger.projections")

Note = tuple[int, str, int, str, bytes]
"""A stored event as a page reads it: (position, originator id as text, version, topic,
state)."""

TABLES = (
    "rl_tracking",
    "rl_runs",
    "rl_resources",
    "rl_run_log",
    "rl_steps",
    "rl_runners",
    "rl_heartbeats",
    "rl_tokens",
    "rl_definitions",
    "rl_occurrences",
    "rl_deliveries",
)


class Cursor(Protocol):
    def execute(self, statement: Any, params: Any = ...) -> Any: ...
    def executemany(self, statement: Any, params: Any) -> Any: ...
    def fetchall(self) -> Any: ...
    def fetchone(self) -> Any: ...


class Backend(ABC):
    """What the projections and the bulk loader need from one engine."""

    suffix = ""
    events_table: str
    """The library's table of stored events."""
    event_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """The driver's errors that a value being written causes (a NUL, a broken constraint)."""
    store_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    """Every error of the driver; those not in event_errors are the store's trouble."""
    row_locks: ClassVar[bool] = False
    """Whether SELECT ... FOR UPDATE locks rows (PostgreSQL); else a write locks the store."""
    writes_aside: ClassVar[bool] = False
    """Whether a rebuild writes its pages on a thread of its own (projections/writer.py)."""
    lateral: ClassVar[bool] = False
    """Whether a read over several keys goes as one text, the keys in an array (PostgreSQL)."""

    def with_suffix(self, suffix: str) -> Backend:
        """The same store, naming a parallel set of tables (a rebuild's shadow)."""
        shadow = copy.copy(self)
        shadow.suffix = suffix
        return shadow

    @abstractmethod
    def transaction(self, *, commit: bool) -> AbstractContextManager[Cursor]:
        """A transaction on the ledger's own store; commits on success when asked to."""

    def select(self, statement: str, params: Sequence[Any], *, by_index: bool = False) -> list[Any]:
        """The rows of one read in a transaction of its own. ``by_index`` asks for a plan that
        reads a partial index entry by entry (see PostgresBackend)."""
        with self.transaction(commit=False) as cursor:
            cursor.execute(statement, params)
            return list(cursor.fetchall())

    @abstractmethod
    def placeholder(self) -> str:
        """This engine's parameter marker."""

    @abstractmethod
    def qualify(self, table: str) -> str:
        """A projection table's name as this store spells it."""

    @abstractmethod
    def select_streams(self, ids: Sequence[UUID]) -> list[StoredEvent]:
        """Every stored event of these aggregates, grouped by aggregate, in version order."""

    @abstractmethod
    def select_page(self, after: int, limit: int) -> list[Note]:
        """The store's next events after a position: (position, originator id as text,
        version, topic, state), in order."""

    @abstractmethod
    def peek(self, names: Sequence[str], limit: int) -> tuple[int, list[Note]]:
        """The lowest tracked position of the named views and the page of events after it, as
        select_page reads them: one read, no lock, nothing written."""

    @abstractmethod
    def select_positioned(self, ids: Sequence[UUID]) -> list[tuple[int, StoredEvent]]:
        """Every stored event of these aggregates with its position in the store."""

    @abstractmethod
    def last_version(self, originator_id: UUID) -> int | None:
        """The version of an aggregate's last stored event, read without the event."""

    @abstractmethod
    def absent(self, names: Sequence[str]) -> set[str]:
        """Which of these tables and indexes (named unqualified, in runledger's schema) the
        store does not hold."""

    def missing_tables(self) -> list[str]:
        """The runledger tables this store does not have yet."""
        wanted = [self.events_table, *TABLES]
        gone = self.absent(wanted)
        return [t for t in wanted if t in gone]

    def blames_event(self, error: BaseException) -> bool:
        """Whether applying an event raised this, rather than the store being in trouble."""
        found = driver_error(error)
        if isinstance(found, self.event_errors):
            return "closed" not in str(found)
        return not isinstance(found, (*self.store_errors, PersistenceError, OSError))

    @abstractmethod
    def read_only(self, error: BaseException) -> bool:
        """Whether this error says the store cannot be written."""

    @contextmanager
    def savepoint(self, cursor: Cursor, name: str) -> Iterator[None]:
        """Roll back only what the block wrote when it raises; the transaction goes on."""
        cursor.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            try:
                cursor.execute(f"ROLLBACK TO SAVEPOINT {name}")
                cursor.execute(f"RELEASE SAVEPOINT {name}")
            except Exception as lost:  # the transaction is lost anyway: the first error says why
                log.warning("rolling back to savepoint %s failed too: %s", name, lost)
            raise
        cursor.execute(f"RELEASE SAVEPOINT {name}")

    def insert(
        self, cursor: Cursor, table: str, columns: Sequence[str], rows: list[list[Any]]
    ) -> None:
        """Insert many rows that no row of the table has the key of (a rebuild's)."""
        statement = self.sql(
            f"INSERT INTO {{{table}}} ({', '.join(columns)}) VALUES ({self.markers(len(columns))})"
        )
        cursor.executemany(statement, rows)

    def upsert(
        self,
        cursor: Cursor,
        table: str,
        columns: Sequence[str],
        key: str,
        rows: list[list[Any]],
    ) -> None:
        """Insert or replace many rows of a projection table, keyed by ``key``."""
        cursor.executemany(self.upsert_statement(table, columns, key), rows)

    def upsert_statement(self, table: str, columns: Sequence[str], key: str) -> str:
        """The statement that inserts or replaces one row."""
        names = ", ".join(columns)
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
        return self.sql(
            f"INSERT INTO {{{table}}} ({names}) VALUES ({self.markers(len(columns))}) "
            f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
        )

    def sql(self, statement: str) -> str:
        """A statement written once, with {table} names and %s markers, for this engine."""
        return _render(
            statement, self.placeholder(), tuple(self.qualify(t) for t in TABLES), self.suffix
        )

    def markers(self, count: int) -> str:
        return ", ".join([self.placeholder()] * count)

    def among(self, values: Sequence[str]) -> tuple[str, list[Any]]:
        """A condition's right side that holds for any of ``values`` (ids: no comma in one),
        and its parameters."""
        return f"IN ({self.markers(len(values))})", list(values)


@cache
def _render(statement: str, marker: str, qualified: tuple[str, ...], suffix: str) -> str:
    names = dict(zip(TABLES, qualified, strict=True))
    names |= {f"ix_{t}": f"{t}{suffix}" for t in TABLES}
    return statement.format(**names).replace("%s", marker)


def driver_error(error: BaseException) -> BaseException:
    """The driver's own error under the library's wrappers, which keep only its text."""
    found = error
    while isinstance(found, PersistenceError) and found.__cause__ is not None:
        found = found.__cause__
    return found


def chunks(items: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

"""The cleanup sweep written directly against the driver (psycopg or sqlite3), no event sourcing:
the baseline bench_sweep measures ours against.

It does the work runledger's sweep does, the way a careful engineer would write it in plain SQL:

- the same reads: the candidate query (``statements.CANDIDATES``, the very text), the runs' rows
  with their entries counted, and each run's page of retryable entries (the pass's runs in one
  statement, ``statements.retryable_pages_statement``), on tables made by the
  same DDL (the same five indexes on the resources table);
- the same grouping (each lease alone, everything else by the step that made it) and the same
  bounds (runs per sweep, groups per run);
- the same durability: one write transaction per module call, holding the verdict of the call
  before it and the claim of this one, so a claim is committed before its call starts and its
  verdict right after it ends; a run's last verdict and its summary line commit with the next
  run's first claim (or at the end of the pass), as runledger's pass carries them;
- a claim guarded as the projection's rule says (an UPDATE whose WHERE repeats the retryable
  condition: of two racing workers one wins), a verdict guarded by the claim it answers;
- the same log lines (``cleanup.reverted``/``cleanup.failed`` with the same detail, and one
  ``cleanup.swept`` per run) into a run log keyed by its own sequence;
- the same lanes: a pass's runs dealt to ``lanes`` lanes (runledger's ``cleanup_lanes``), each
  worked on a thread and a connection of its own, each carrying its own runs' last verdicts;
- the same module function, called in the lane's thread.

What it does not write is history: each entry's row is updated in place, so nothing is left to
replay an entry from. That is the price event sourcing pays and the ratio shows.
"""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from runledger.application.services.sweep.lanes import at_once, divide
from runledger.application.services.sweep.verdicts import Summary
from runledger.domain.backoff import Backoff
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND
from runledger.projections.schema import TABLE_DDL, is_open
from runledger.projections.statements import (
    CANDIDATES,
    PAGE,
    retryable_pages_statement,
    runs_statement,
)

TABLES = ("rl_runs", "rl_resources", "rl_run_log")
Revert = Callable[..., Any]
Row = dict[str, Any]


@dataclass
class Sql:
    """One connection of either engine, and the statements as that engine spells them."""

    engine: str
    conn: Any
    schema: str = ""
    source: str = ""
    """The URL or file it was opened on: ``another`` opens it again."""
    writes: int = 0
    """Write transactions committed."""

    @classmethod
    def postgres(cls, url: str, schema: str) -> Sql:
        conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
        return cls("postgres", conn, schema, url)

    @classmethod
    def sqlite(cls, path: str) -> Sql:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        return cls("sqlite", conn, source=path)

    def another(self) -> Sql:
        """A connection of its own to the same tables, for a lane."""
        if self.engine == "postgres":
            return Sql.postgres(self.source, self.schema)
        return Sql.sqlite(self.source)

    def table(self, name: str) -> str:
        return f'"{self.schema}".{name}' if self.engine == "postgres" else name

    def render(self, statement: str) -> str:
        names = {t: self.table(t) for t in TABLES} | {f"ix_{t}": t for t in TABLES}
        text = statement.format(**names)
        return text if self.engine == "postgres" else text.replace("%s", "?")

    def marks(self, count: int) -> str:
        return ", ".join(["%s" if self.engine == "postgres" else "?"] * count)

    def read(self, statement: str, params: list[Any], *, by_index: bool = False) -> list[Any]:
        """One read; ``by_index`` as runledger's backends take it: on PostgreSQL no bitmap scan,
        set in the same round trip (projections/postgres.py says why)."""
        if not (by_index and self.engine == "postgres"):
            return list(self.conn.execute(self.render(statement), params).fetchall())
        with self.conn.pipeline(), self.conn.transaction():
            self.conn.execute("SET LOCAL enable_bitmapscan = off")
            cursor = self.conn.execute(self.render(statement), params)
        return list(cursor.fetchall())

    @contextlib.contextmanager
    def write(self) -> Iterator[Any]:
        """One transaction, committed when the block ends."""
        self.writes += 1
        if self.engine == "postgres":
            with self.conn.transaction():
                yield self.conn
            return
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def create(self) -> None:
        """The runs and resources tables as runledger makes them; a run log keyed by a
        sequence of its own (runledger's is keyed by the event store's position)."""
        serial = "BIGSERIAL" if self.engine == "postgres" else "INTEGER"
        with self.write() as db:
            for table in ("rl_runs", "rl_resources"):
                for statement in TABLE_DDL[table]:
                    db.execute(self.render(statement))
            db.execute(
                self.render(
                    f"CREATE TABLE {{rl_run_log}} (position {serial} PRIMARY KEY, "
                    "run_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, kind TEXT NOT NULL, "
                    "detail TEXT NOT NULL)"
                )
            )
            db.execute(self.render(TABLE_DDL["rl_run_log"][1]))

    def close(self) -> None:
        self.conn.close()


@dataclass
class Group:
    rows: list[Row]
    what: str
    claimed: dict[str, Row] = field(default_factory=dict)
    """Entry id -> its row as the claim left it (attempts counted)."""

    @property
    def head(self) -> Row:
        return self.rows[0]


@dataclass
class Pending:
    """A call's verdict, decided, awaiting the transaction that also claims the next call."""

    group: Group
    given_back: list[Row]
    error: str
    line: tuple[str, float, str, str]
    counts: Summary


@dataclass
class PlainSweep:
    """The sweep, in SQL. ``sweep`` is one bounded pass; answers the runs it worked."""

    sql: Sql
    revert: Revert
    worker: str
    clock: Callable[[], datetime]
    max_attempts: int = 3
    run_batch: int = 10
    groups_per_run: int = 25
    claim_for: timedelta = timedelta(seconds=15)
    backoff: Backoff = field(default_factory=Backoff)
    lanes: int = 1
    """Lanes a pass's runs are divided between, each on its own thread and connection, as
    runledger's sweep divides them (services/sweep/lanes.py)."""
    carried: list[tuple[str, Pending | None, Summary]] = field(default_factory=list)
    others: list[PlainSweep] = field(default_factory=list)
    """The lanes past the first, made when first needed."""

    @property
    def writes(self) -> int:
        """Write transactions committed, by every lane."""
        return self.sql.writes + sum(lane.sql.writes for lane in self.others)

    def close(self) -> None:
        for lane in self.others:
            lane.sql.close()

    def sweep(self) -> int:
        now = self.clock()
        stamp = now.timestamp()
        found = self.sql.read(
            CANDIDATES, [stamp, self.max_attempts, stamp, stamp, self.run_batch], by_index=True
        )
        candidates = [row["run_id"] for row in found]
        random.shuffle(candidates)
        if not candidates:
            return 0
        runs = {
            row["run_id"]: row
            for row in self.sql.read(
                runs_statement(f"IN ({self.sql.marks(len(candidates))})"),
                [self.max_attempts, stamp, *candidates, *candidates],
            )
        }
        work = self._pages([runs[r] for r in candidates if r in runs], now)
        while len(self.others) < self.lanes - 1:
            lane = replace(self, sql=self.sql.another(), lanes=1, carried=[], others=[])
            self.others.append(lane)

        def work_lane(sweep: PlainSweep, run_ids: list[str]) -> None:
            for run_id in run_ids:
                sweep._clean(run_id, runs[run_id], work[run_id])
            if sweep.carried:
                with sweep.sql.write() as db:
                    sweep._land(db)

        jobs = zip([self, *self.others], divide(list(work), self.lanes), strict=False)
        at_once([partial(work_lane, sweep, run_ids) for sweep, run_ids in jobs])
        return len(work)

    def _pages(self, runs: list[Row], now: datetime) -> dict[str, list[Row]]:
        """Every run's page of retryable entries, in one statement."""
        statement, params = retryable_pages_statement(
            [(UUID(run["run_id"]), run["status"] == "running") for run in runs],
            now,
            self.max_attempts,
            PAGE,
            lateral=self.sql.engine == "postgres",
        )
        pages: dict[str, list[Row]] = {run["run_id"]: [] for run in runs}
        for row in self.sql.read(statement, params):
            pages[row["run_id"]].append(dict(row))
        return pages

    def _clean(self, run_id: str, run: Row, rows: list[Row]) -> None:
        summary = Summary(by=self.worker, remaining=int(run["unresolved"] or 0))
        pending: Pending | None = None
        worked = False
        for group in group_rows(rows)[: self.groups_per_run]:
            with self.sql.write() as db:
                self._land(db)
                if pending is not None:
                    self._record(db, pending, summary)
                self._claim(db, group)
            pending = None
            if group.claimed:
                worked = True
                pending = self._judge(run_id, group, self._call(group))
        if worked:  # the run's last verdict and line ride with the next run's first claim
            self.carried.append((run_id, pending, summary))

    def _land(self, db: Any) -> None:
        """The last verdict and summary line of each run the pass carries."""
        for run_id, pending, summary in self.carried:
            if pending is not None:
                self._record(db, pending, summary)
            self._line(
                db, (run_id, self.clock().timestamp(), "cleanup.swept", dumps(asdict(summary)))
            )
        self.carried = []

    def _claim(self, db: Any, group: Group) -> None:
        now = self.clock()
        stamp = now.timestamp()
        expires = (now + self.claim_for).timestamp()
        ids = [row["entry_id"] for row in group.rows]
        claimed = db.execute(
            self.sql.render(
                "UPDATE {rl_resources} SET attempts = attempts + 1, claim_worker = %s, "
                "claim_expires = %s, next_attempt = NULL, updated_at = %s, version = version + 1 "
                f"WHERE entry_id IN ({self.sql.marks(len(ids))}) AND {is_open('status')} "
                "AND terminal = 0 AND attempts < %s "
                "AND (claim_expires IS NULL OR claim_expires <= %s) "
                "AND (next_attempt IS NULL OR next_attempt <= %s) "
                "RETURNING entry_id, attempts, claim_expires"
            ),
            [self.worker, expires, stamp, *ids, self.max_attempts, stamp, stamp],
        ).fetchall()
        by_id = {row["entry_id"]: row for row in group.rows}
        for row in claimed:
            entry = by_id[row["entry_id"]]
            entry["attempts"], entry["claim_expires"] = row["attempts"], row["claim_expires"]
            group.claimed[row["entry_id"]] = entry

    def _call(self, group: Group) -> tuple[bool, list[str], str | None]:
        """Whether the module gave the group back, the refs it could not, and its error."""
        head = group.head
        if head["kind"] == LEASE_KIND:
            return False, [], "leases are restored by runledger alone: not in this baseline"
        resources = [
            {
                "kind": r["kind"],
                "ref": r["ref"],
                "payload": None if r["payload"] is None else json.loads(r["payload"]),
                "member_key": r["member_key"],
            }
            for r in group.claimed.values()
            if r["kind"] != PLACEHOLDER_KIND
        ]
        try:
            answer = self.revert(
                resources=resources,
                idempotency_key=head["idempotency_key"],
                run_id=head["run_id"],
            )
        except Exception as error:
            return False, [], f"{type(error).__name__}: {error}"
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            return False, [], "the module did not answer ok"
        return True, [str(f) for f in answer.get("failed") or []], None

    def _judge(
        self, run_id: str, group: Group, answer: tuple[bool, list[str], str | None]
    ) -> Pending:
        ok, failed, error = answer
        claimed = list(group.claimed.values())
        given_back = [r for r in claimed if ok and r["ref"] not in failed]
        counts = Summary(attempted=len(claimed), reverted=len(given_back))
        counts.failed = counts.attempted - counts.reverted
        first = min(claimed, key=lambda r: str(r["entry_id"]))
        detail: dict[str, Any] = {
            "what": group.what,
            "outcome": "done" if ok else "retry",
            "resources": sorted(f"{r['kind']}:{r['ref']}" for r in claimed),
            "attempt": first["attempts"],
            "by": self.worker,
        }
        if error:
            detail["error"] = error
        if failed:
            detail["failed"] = sorted(failed)
        kind = "cleanup.reverted" if ok and not failed else "cleanup.failed"
        line = (run_id, self.clock().timestamp(), kind, dumps(detail))
        why = error or f"{group.what} could not give it back"
        return Pending(group, given_back, why, line, counts)

    def _record(self, db: Any, pending: Pending, summary: Summary) -> None:
        """A call's verdict on the entries it still holds, and its log line."""
        now = self.clock()
        done = pending.given_back
        if done:
            db.execute(
                self.sql.render(
                    "UPDATE {rl_resources} SET status = 'reverted', claim_worker = NULL, "
                    "claim_expires = NULL, next_attempt = NULL, updated_at = %s, "
                    "version = version + 1 "
                    f"WHERE entry_id IN ({self.sql.marks(len(done))}) AND claim_worker = %s "
                    "AND claim_expires = %s"
                ),
                [
                    now.timestamp(),
                    *[r["entry_id"] for r in done],
                    self.worker,
                    done[0]["claim_expires"],
                ],
            )
        for row in pending.group.claimed.values():
            if row not in done:
                self._fail(db, row, pending.error, now)
        self._line(db, pending.line)
        summary.add(pending.counts)

    def _fail(self, db: Any, row: Row, error: str, now: datetime) -> None:
        retry_at = self.backoff.next_attempt(
            row["attempts"], self.max_attempts, now, random.random()
        )
        db.execute(
            self.sql.render(
                "UPDATE {rl_resources} SET status = 'failing', last_error = %s, "
                "claim_worker = NULL, claim_expires = NULL, next_attempt = %s, updated_at = %s, "
                "version = version + 1 WHERE entry_id = %s AND claim_worker = %s "
                "AND claim_expires = %s"
            ),
            [
                error,
                None if retry_at is None else retry_at.timestamp(),
                now.timestamp(),
                row["entry_id"],
                self.worker,
                row["claim_expires"],
            ],
        )

    def _line(self, db: Any, line: tuple[str, float, str, str]) -> None:
        db.execute(
            self.sql.render(
                "INSERT INTO {rl_run_log} (run_id, at, kind, detail) VALUES (%s, %s, %s, %s)"
            ),
            list(line),
        )


def group_rows(rows: list[Row]) -> list[Group]:
    """Each lease alone; everything else by the step, key and action that made it, in the order
    the entries were first recorded."""
    groups: dict[tuple[str, ...], Group] = {}
    for row in rows:
        if row["kind"] == LEASE_KIND:
            key: tuple[str, ...] = ("lease", row["entry_id"])
            what = row["ref"]
        else:
            placeholder = str(row["kind"] == PLACEHOLDER_KIND)
            key = ("step", row["step"], row["idempotency_key"], row["action"] or "", placeholder)
            what = row["action"] or "an unknown action"
        groups.setdefault(key, Group([], what)).rows.append(row)
    return list(groups.values())


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)

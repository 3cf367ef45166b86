"""Benchmark of runledger's projector beside the eventsourcing library's own projection machinery:
the same events, projected into the same rows, in the same store, in the same run.

    .venv/bin/python -m scripts.bench_projector --store sqlite --entries 5000
    .venv/bin/python -m scripts.bench_projector --store postgres --entries 5000

The events are finished runs whose entries were each recorded, claimed and given back (the
history ``bench_history.py`` writes). Both sides fill the resources view's table with the
resources view's own row function (``apply_resource``):

- ours: ``Projector`` with the resources view alone, from position zero: pages of events, each
  page's rows and its tracking position in one transaction;
- the library's: a ``Projection`` whose view is the library's tracking recorder (SQLite or
  PostgreSQL) writing the same row and the library's tracking record in one transaction per
  event, the stock pattern. On PostgreSQL it runs under the library's ``ProjectionRunner``
  (its subscription and thread); 9.5's SQLite recorder has no subscription, so on SQLite the
  script runs the loop the runner's thread runs (``select_notifications`` pages, the mapper,
  ``process_event``) itself.

The two tables are compared row for row at the end. A script, not a test: it builds a fresh
SQLite file under /tmp or a fresh PostgreSQL schema, prints figures, and removes the store.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta
from typing import Any, ClassVar

from eventsourcing.persistence import InfrastructureFactory, Tracking
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.projection import Projection, ProjectionRunner
from eventsourcing.sqlite import SQLiteTrackingRecorder
from eventsourcing.utils import Environment

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.application.store.url import store_config
from runledger.projections.backend import Backend
from runledger.projections.projector import Projector
from runledger.projections.schema import create_table
from runledger.projections.views.resources import ResourcesView, apply_resource
from scripts.bench_history import NOW, fresh_store, given_back_run

COLUMNS = ResourcesView.columns
TOPICS = tuple(sorted(ResourcesView.topics()))
PAGE = 1_000


class ResourceRows:
    """The library-side view: an entry's row and the library's tracking record, written in
    one transaction per event."""

    rows: ClassVar[Backend]  # the side tables' names and parameter markers

    def apply(self: Any, event: Any, tracking: Tracking) -> None:
        rows = self.rows
        with self.datastore.transaction(commit=True) as cursor:
            cursor.execute(
                rows.sql("SELECT * FROM {rl_resources} WHERE entry_id = %s"),
                [str(event.originator_id)],
            )
            found = cursor.fetchone()
            view = ResourcesView()
            before = None if found is None else view.revived({c: found[c] for c in COLUMNS})
            row = apply_resource(event, before)
            rows.upsert(cursor, "rl_resources", COLUMNS, "entry_id", [view.stored(row)])
            self._insert_tracking(cursor, tracking)


class SQLiteResourceRows(ResourceRows, SQLiteTrackingRecorder):
    pass


class PostgresResourceRows(ResourceRows, PostgresTrackingRecorder):
    pass


class LibraryResources(Projection[Any]):
    name = "lib_resources"
    topics = TOPICS

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        self.view.apply(domain_event, tracking)


def populate(rl: Runledger, entries: int) -> None:
    for _ in range(max(entries // 250, 1)):
        rl.app.save(*given_back_run(250, NOW - timedelta(days=1)))


def last_resource_event(rl: Runledger) -> int:
    head = rl.app.recorder.max_notification_id() or 0
    notes = rl.app.recorder.select_notifications(start=max(head - 50, 0), limit=50, topics=TOPICS)
    return notes[-1].id


def ours(rl: Runledger) -> float:
    started = time.perf_counter()
    Projector(rl.app, rl.backend, [ResourcesView()]).catch_up()
    return time.perf_counter() - started


def library(rl: Runledger, engine: str, env: dict[str, str]) -> float:
    ResourceRows.rows = rl.backend.with_suffix("_lib")
    with rl.backend.transaction(commit=True) as cursor:
        create_table(ResourceRows.rows, cursor, "rl_resources", indexes=False)
    env = {**env, "CREATE_TABLE": "y"}
    started = time.perf_counter()
    if engine == "postgres":
        with ProjectionRunner(
            application_class=LedgerApp,
            projection_class=LibraryResources,
            view_class=PostgresResourceRows,
            env=env,
        ) as runner:
            runner.wait(last_resource_event(rl), timeout=3_600)
    else:
        _sqlite_loop(rl, env)
    return time.perf_counter() - started


def _sqlite_loop(rl: Runledger, env: dict[str, str]) -> None:
    """What ProjectionRunner's thread does with a subscription, over pages of notifications."""
    factory: Any = InfrastructureFactory.construct(env=Environment(LibraryResources.name, env))
    projection = LibraryResources(view=factory.tracking_recorder(SQLiteResourceRows))
    app, position = rl.app, 0
    while notes := app.recorder.select_notifications(
        start=position, limit=PAGE, topics=TOPICS, inclusive_of_start=False
    ):
        for note in notes:
            projection.process_event(app.mapper.to_domain_event(note), Tracking(app.name, note.id))
        position = notes[-1].id


def table(rl: Runledger, backend: Backend) -> list[tuple[Any, ...]]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(backend.sql("SELECT * FROM {rl_resources} ORDER BY entry_id"))
        return [tuple(row[c] for c in COLUMNS) for row in cursor.fetchall()]


def load() -> str:
    return "load avg " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--entries", type=int, default=5_000, help="entries given back")
    args = parser.parse_args()
    url, drop = fresh_store(args.store)
    try:
        settings = Settings(database_url=url)
        init_store(settings)
        with bootstrap(settings, Registry(), clock=lambda: NOW) as rl:
            populate(rl, args.entries)
            events = len(table_events(rl))
            print(f"{args.store}: {events:,} resource events ({load()}, {os.cpu_count()} cores)")
            mine = ours(rl)
            print(f"  ours      {events / mine:>9,.0f} events/s ({mine:.2f} s, {load()})")
            theirs = library(rl, args.store, store_config(url).env)
            print(f"  library   {events / theirs:>9,.0f} events/s ({theirs:.2f} s, {load()})")
            same = table(rl, rl.backend) == table(rl, rl.backend.with_suffix("_lib"))
            print(f"  ours/library = {theirs / mine:.1f}x; the two tables are equal: {same}")
    finally:
        drop()


def table_events(rl: Runledger) -> list[int]:
    found, position = [], 0
    while notes := rl.app.recorder.select_notifications(
        start=position, limit=PAGE, topics=TOPICS, inclusive_of_start=False
    ):
        found += [n.id for n in notes]
        position = notes[-1].id
    return found


if __name__ == "__main__":
    main()

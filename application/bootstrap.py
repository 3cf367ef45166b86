from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from runledger.application.brake import Brake
from runledger.application.loading import load_modules
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.bulk import Bulk
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.decisions import Decisions
from runledger.application.services.definitions import Definitions
from runledger.application.services.dry_run import DryRunner
from runledger.application.services.fleet import Fleet
from runledger.application.services.history import History
from runledger.application.services.holds import Holds
from runledger.application.services.leases import CoreLease
from runledger.application.services.ledger import Ledger
from runledger.application.services.occurrences import Occurrences
from runledger.application.services.once import Once
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.running.dispatch import Dispatcher
from runledger.application.services.running.division import Division, Share
from runledger.application.services.running.starts import Starts
from runledger.application.services.runs import Runs
from runledger.application.services.serving import ServedElsewhere, served_by
from runledger.application.services.sessions import Sessions
from runledger.application.services.sweep.give_back import GiveBack
from runledger.application.services.tokens import Tokens
from runledger.application.services.webhooks import Webhooks
from runledger.application.services.webhooks_addresses import Destinations
from runledger.application.services.webhooks_outbox import Outbox, install
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams, initialising, open_app
from runledger.application.store.one_projector import read_hook
from runledger.application.store.url import store_config
from runledger.application.telemetry import Telemetry
from runledger.projections.backend import Backend
from runledger.projections.definitions import DefinitionRows
from runledger.projections.deliveries import DeliveryRows
from runledger.projections.pages import Pages
from runledger.projections.projector import Projector
from runledger.projections.queries import Queries
from runledger.projections.runners import RunnerRows
from runledger.projections.tokens import TokenRows


def utc_now() -> datetime:
    return datetime.now(UTC)


def init_store(settings: Settings | None = None) -> str:
    """Create every table, once, in one explicit step; running it again changes nothing, and
    so does running it from many processes at once (they take turns under a lock)."""
    settings = settings or Settings.from_env()
    config = store_config(settings.database_url, settings.connect_timeout_s)
    with initialising(config) as (app, backend, cursor):
        Projector(app, backend).create_tables(cursor)
    return config.display


Serving = Callable[[], ServedElsewhere]
"""What the live runners serve, asked once per leg (services/serving.py)."""


def bootstrap(
    settings: Settings | None = None,
    registry: Registry | None = None,
    clock: Callable[[], datetime] = utc_now,
    telemetry: Telemetry | None = None,
) -> Runledger:
    """The composition root. Opens the configured store, which must have been initialised.

    Without a registry, modules are loaded: the built-in ones named by the settings, then every
    folder of RUNLEDGER_MODULES_DIR. A registry given by the caller (a test) is used as it is.
    """
    settings = settings or Settings.from_env()
    w = _opened(
        settings=settings,
        registry=registry if registry is not None else Registry(),
        clock=clock,
        telemetry=telemetry or Telemetry(),
    )
    rl = _wired(w)
    install(w.app, Outbox(app=w.app, clock=w.clock))  # facts carry their deliveries
    if registry is None:
        load_modules(rl)
    return rl


@dataclass(frozen=True, kw_only=True)
class _Opened:
    """What every service is built from: the settings, the store with its views and readers,
    the module registry, the clock and the telemetry. Only bootstrap sees it whole; each
    service is given by keyword the parts it uses."""

    settings: Settings
    app: LedgerApp
    backend: Backend
    projector: Projector
    queries: Queries
    streams: Streams
    fresh: Callable[[], int]
    registry: Registry
    clock: Callable[[], datetime]
    telemetry: Telemetry


def _opened(
    *,
    settings: Settings,
    registry: Registry,
    clock: Callable[[], datetime],
    telemetry: Telemetry,
) -> _Opened:
    app, backend = open_app(
        store_config(settings.database_url, settings.connect_timeout_s, settings.store_timeout_s)
    )
    projector = Projector(app, backend)
    # Every read of the views is caught up first: read-your-writes, kept in one place. On
    # PostgreSQL one process projects for the others, which wait for it (store/one_projector.py).
    fresh = read_hook(app, projector, settings.projection_wait_s)

    return _Opened(
        settings=settings,
        app=app,
        backend=backend,
        projector=projector,
        queries=Queries(backend, fresh=fresh, seen=projector.seen),
        streams=Streams(app, backend),
        fresh=fresh,
        registry=registry,
        clock=clock,
        telemetry=telemetry,
    )


def _wired(w: _Opened) -> Runledger:
    ledger = Ledger(app=w.app, streams=w.streams, queries=w.queries, clock=w.clock)
    core_lease = CoreLease(app=w.app, registry=w.registry, settings=w.settings, clock=w.clock)
    fleet = Fleet(
        app=w.app,
        rows=RunnerRows(w.backend, fresh=w.fresh),
        gone_after_s=w.settings.runner_gone_s,
        clock=w.clock,
    )
    serving = served_by(fleet, w.clock)
    division = Division(fleet=fleet, clock=w.clock)
    pages = Pages(w.backend, fresh=w.fresh)
    holds = Holds(core_lease=core_lease, ledger=ledger, queries=w.queries, clock=w.clock)
    cleanup = _cleanup(
        w, ledger=ledger, core_lease=core_lease, holds=holds, serving=serving, share=division.share
    )
    dry_runner = DryRunner(
        registry=w.registry,
        core_lease=core_lease,
        settings=w.settings,
        clock=w.clock,
        serving=serving,
    )
    runs = _runs(
        w,
        ledger=ledger,
        core_lease=core_lease,
        dry_runner=dry_runner,
        serving=serving,
        share=division.share,
    )
    definition_rows = DefinitionRows(w.backend, fresh=w.fresh)
    definitions = Definitions(
        app=w.app, streams=w.streams, rows=definition_rows, dry_runner=dry_runner, clock=w.clock
    )
    return Runledger(
        settings=w.settings,
        app=w.app,
        backend=w.backend,
        projector=w.projector,
        queries=w.queries,
        registry=w.registry,
        ledger=ledger,
        cleanup=cleanup,
        decisions=Decisions(
            app=w.app,
            streams=w.streams,
            queries=w.queries,
            ledger=ledger,
            cleanup=cleanup,
            holds=holds,
            clock=w.clock,
        ),
        holds=holds,
        reconciler=Reconciler(
            app=w.app,
            streams=w.streams,
            queries=w.queries,
            registry=w.registry,
            settings=w.settings,
            clock=w.clock,
        ),
        runs=runs,
        history=History(
            app=w.app, backend=w.backend, queries=w.queries, settings=w.settings, clock=w.clock
        ),
        fleet=fleet,
        pages=pages,
        tokens=Tokens(app=w.app, rows=TokenRows(w.backend, fresh=w.fresh), clock=w.clock),
        sessions=Sessions(app=w.app, clock=w.clock),
        brake=Brake(per_minute=w.settings.failed_auth_per_minute, refused=w.telemetry.braked),
        bulk=Bulk(
            queries=w.queries,
            pages=pages,
            cleanup=cleanup,
            holds=holds,
            max_attempts=w.settings.max_revert_attempts,
            clock=w.clock,
        ),
        definitions=definitions,
        occurrences=Occurrences(
            app=w.app, definitions=definitions, rows=definition_rows, clock=w.clock
        ),
        starts=Starts(
            app=w.app, rows=definition_rows, runs=runs, dry_runner=dry_runner, clock=w.clock
        ),
        once=Once(app=w.app, clock=w.clock),
        webhooks=Webhooks(
            app=w.app,
            streams=w.streams,
            rows=DeliveryRows(w.backend, fresh=w.fresh),
            clock=w.clock,
            destinations=Destinations(allowed=w.settings.webhook_allow_networks),
        ),
        clock=w.clock,
        telemetry=w.telemetry,
    )


def _cleanup(
    w: _Opened,
    *,
    ledger: Ledger,
    core_lease: CoreLease,
    holds: Holds,
    serving: Serving,
    share: Callable[[], Share],
) -> Cleanup:
    return Cleanup(
        app=w.app,
        streams=w.streams,
        queries=w.queries,
        ledger=ledger,
        give_back=GiveBack(
            registry=w.registry,
            core_lease=core_lease,
            settings=w.settings,
            observe=w.telemetry.module_call,
        ),
        holds=holds,
        settings=w.settings,
        clock=w.clock,
        serving=serving,
        share=share,
    )


def _runs(
    w: _Opened,
    *,
    ledger: Ledger,
    core_lease: CoreLease,
    dry_runner: DryRunner,
    serving: Serving,
    share: Callable[[], Share],
) -> Runs:
    return Runs(
        app=w.app,
        streams=w.streams,
        queries=w.queries,
        ledger=ledger,
        dispatcher=Dispatcher(
            app=w.app,
            ledger=ledger,
            registry=w.registry,
            core_lease=core_lease,
            settings=w.settings,
            clock=w.clock,
            observe=w.telemetry.module_call,
        ),
        core_lease=core_lease,
        registry=w.registry,
        dry_runner=dry_runner,
        settings=w.settings,
        clock=w.clock,
        serving=serving,
        share=share,
    )

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from runledger.application.modules.loader import Loader, ModuleEvents, ModuleStatus
from runledger.application.modules.protocol import Registry
from runledger.application.services.bulk import Bulk
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.decisions import Decisions
from runledger.application.services.definitions import Definitions
from runledger.application.services.dry_run import DryRunner
from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.history import History
from runledger.application.services.holds import Holds
from runledger.application.services.inputs import worker_name
from runledger.application.services.leases import CoreLease
from runledger.application.services.ledger import Ledger
from runledger.application.services.occurrences import Occurrences
from runledger.application.services.once import Once
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.running.dispatch import Dispatcher
from runledger.application.services.running.runner import Runner
from runledger.application.services.running.starts import Starts
from runledger.application.services.runs import Runs
from runledger.application.services.serving import served_by
from runledger.application.services.sweep.give_back import GiveBack
from runledger.application.services.sweep.pacing import Wake
from runledger.application.services.tokens import Tokens
from runledger.application.settings import Settings, store_config
from runledger.application.store.ledger_app import LedgerApp, Streams, initialising, open_app
from runledger.application.telemetry import Telemetry
from runledger.projections.backend import Backend
from runledger.projections.definitions import DefinitionRows
from runledger.projections.pages import Pages
from runledger.projections.projector import Projector
from runledger.projections.queries import Queries
from runledger.projections.read_model import ReadModel
from runledger.projections.runners import RunnerRows
from runledger.projections.tokens import TokenRows


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(kw_only=True)
class Runledger:
    """Everything the CLI, the runner and the tests use, wired once."""

    settings: Settings
    app: LedgerApp
    backend: Backend
    projector: ReadModel
    queries: Queries
    registry: Registry
    ledger: Ledger
    cleanup: Cleanup
    decisions: Decisions
    holds: Holds
    reconciler: Reconciler
    runs: Runs
    history: History
    fleet: Fleet
    pages: Pages
    tokens: Tokens
    bulk: Bulk
    definitions: Definitions
    occurrences: Occurrences
    starts: Starts
    once: Once
    clock: Callable[[], datetime]
    modules: list[ModuleStatus] = field(default_factory=list)
    loader: Loader | None = None
    telemetry: Telemetry

    @property
    def loaded(self) -> Loaded:
        return Loaded.of(self.registry, self.modules)

    def runner(self, worker: str) -> Runner:
        return Runner(
            runs=self.runs,
            starts=self.starts,
            cleanup=self.cleanup,
            reconciler=self.reconciler,
            worker=worker_name(worker),
            fleet=self.fleet,
            loaded=self.loaded,
            settings=self.settings,
            wake=Wake(self.app.recorder),
            observe=self.telemetry.tick,
        )

    def close(self) -> None:
        if self.loader is not None:
            self.loader.close()
        self.app.close()

    def __enter__(self) -> Runledger:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def init_store(settings: Settings | None = None) -> str:
    """Create every table, once, in one explicit step; running it again changes nothing, and
    so does running it from many processes at once (they take turns under a lock)."""
    settings = settings or Settings.from_env()
    config = store_config(settings.database_url, settings.connect_timeout_s)
    with initialising(config) as (app, backend, cursor):
        Projector(app, backend).create_tables(cursor)
    return config.display


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
    telemetry = telemetry or Telemetry()
    load = registry is None
    registry = registry if registry is not None else Registry()
    app, backend = open_app(store_config(settings.database_url, settings.connect_timeout_s))
    projector = Projector(app, backend)

    # Every read of the views catches them up first: read-your-writes, kept in one place. The
    # projector's catch_up is looked up at each read, so whatever wraps it later (a benchmark's
    # meter, a test's injected fault) wraps these catch-ups too.
    def fresh() -> int:
        return projector.catch_up()

    queries = Queries(backend, fresh=fresh, seen=projector.seen)
    streams = Streams(app, backend)
    ledger = Ledger(app=app, streams=streams, queries=queries, clock=clock)
    core_lease = CoreLease(app=app, registry=registry, settings=settings, clock=clock)
    fleet = Fleet(
        app=app,
        rows=RunnerRows(backend, fresh=fresh),
        gone_after_s=settings.runner_gone_s,
        clock=clock,
    )
    serving = served_by(fleet, clock)
    pages = Pages(backend, fresh=fresh)
    holds = Holds(core_lease=core_lease, ledger=ledger, queries=queries, clock=clock)
    cleanup = Cleanup(
        app=app,
        streams=streams,
        queries=queries,
        ledger=ledger,
        give_back=GiveBack(
            registry=registry,
            core_lease=core_lease,
            settings=settings,
            observe=telemetry.module_call,
        ),
        holds=holds,
        settings=settings,
        clock=clock,
        serving=serving,
    )
    dry_runner = DryRunner(
        registry=registry, core_lease=core_lease, settings=settings, clock=clock, serving=serving
    )
    runs = Runs(
        app=app,
        streams=streams,
        queries=queries,
        ledger=ledger,
        dispatcher=Dispatcher(
            app=app,
            ledger=ledger,
            registry=registry,
            core_lease=core_lease,
            settings=settings,
            clock=clock,
            observe=telemetry.module_call,
        ),
        core_lease=core_lease,
        registry=registry,
        dry_runner=dry_runner,
        settings=settings,
        clock=clock,
        serving=serving,
    )
    definition_rows = DefinitionRows(backend, fresh=fresh)
    definitions = Definitions(
        app=app,
        streams=streams,
        rows=definition_rows,
        dry_runner=dry_runner,
        clock=clock,
    )
    rl = Runledger(
        settings=settings,
        app=app,
        backend=backend,
        projector=projector,
        queries=queries,
        registry=registry,
        ledger=ledger,
        cleanup=cleanup,
        decisions=Decisions(
            app=app,
            streams=streams,
            queries=queries,
            ledger=ledger,
            cleanup=cleanup,
            holds=holds,
            clock=clock,
        ),
        holds=holds,
        reconciler=Reconciler(
            app=app,
            streams=streams,
            queries=queries,
            registry=registry,
            settings=settings,
            clock=clock,
        ),
        runs=runs,
        history=History(app=app, backend=backend, queries=queries, settings=settings, clock=clock),
        fleet=fleet,
        pages=pages,
        tokens=Tokens(app=app, rows=TokenRows(backend, fresh=fresh), clock=clock),
        bulk=Bulk(
            queries=queries,
            pages=pages,
            cleanup=cleanup,
            holds=holds,
            max_attempts=settings.max_revert_attempts,
            clock=clock,
        ),
        definitions=definitions,
        occurrences=Occurrences(
            app=app, definitions=definitions, rows=definition_rows, clock=clock
        ),
        starts=Starts(app=app, rows=definition_rows, runs=runs, dry_runner=dry_runner, clock=clock),
        once=Once(app=app, clock=clock),
        clock=clock,
        telemetry=telemetry,
    )
    if load:
        load_modules(rl)
    return rl


def load_modules(rl: Runledger) -> None:
    settings = rl.settings

    def events(module: str) -> ModuleEvents:
        return ModuleEvents(module, rl.reconciler.reconcile_module, rl.reconciler.expire)

    loader = Loader(
        rl.registry,
        events,
        settings.module_settings,
        register_budget_s=settings.module_load_budget_s,
        environ=settings.module_environ,
    )
    statuses = loader.load_builtins(settings.builtin_names())
    if settings.modules_dir:
        statuses += loader.load([Path(settings.modules_dir)])
    rl.modules = statuses
    rl.loader = loader

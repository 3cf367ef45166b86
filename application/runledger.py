"""The composition root's product: every service of one store, wired once by bootstrap.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from runledger.application.brake import Brake
from runledger.application.modules.loader import Loader, ModuleStatus
from runledger.application.modules.protocol import Registry
from runledger.application.reading.answers import Answers
from runledger.application.reading.fleet import FleetAnswers
from runledger.application.services.bulk import Bulk
from runledger.application.services.cleanup import Cleanup
from runledger.application.services.decisions import Decisions
from runledger.application.services.definitions import Definitions
from runledger.application.services.fleet import Fleet, Loaded
from runledger.application.services.history import History
from runledger.application.services.holds import Holds
from runledger.application.services.inputs import worker_name
from runledger.application.services.ledger import Ledger
from runledger.application.services.occurrences import Occurrences
from runledger.application.services.once import Once
from runledger.application.services.reconcile import Reconciler
from runledger.application.services.running.runner import Runner
from runledger.application.services.running.starts import Starts
from runledger.application.services.runs import Runs
from runledger.application.services.sessions import Sessions
from runledger.application.services.sweep.pacing import Wake
from runledger.application.services.tokens import Tokens
from runledger.application.services.webhooks import Webhooks
from runledger.application.services.webhooks_outbox import Outbox
from runledger.application.services.webhooks_send import Sender
from runledger.application.services.webhooks_watch import Watcher
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp
from runledger.application.telemetry import Telemetry
from runledger.projections.backend import Backend
from runledger.projections.pages import Pages
from runledger.projections.queries import Queries
from runledger.projections.read_model import ReadModel


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
    sessions: Sessions
    brake: Brake
    bulk: Bulk
    definitions: Definitions
    occurrences: Occurrences
    starts: Starts
    once: Once
    webhooks: Webhooks
    clock: Callable[[], datetime]
    modules: list[ModuleStatus] = field(default_factory=list)
    loader: Loader | None = None
    telemetry: Telemetry

    @property
    def fresh(self) -> Callable[[], object]:
        """The read hook every read of the views takes first (store/one_projector.py): on
        PostgreSQL a process that is not the projector waits for it rather than applying."""
        return self.queries.fresh

    @property
    def answers(self) -> Answers:
        return Answers(
            queries=self.queries,
            pages=self.pages,
            runs=self.runs,
            streams=self.ledger.streams,
            clock=self.clock,
            max_attempts=self.settings.max_revert_attempts,
        )

    @property
    def fleet_answers(self) -> FleetAnswers:
        return FleetAnswers(
            fleet=self.fleet,
            projector=self.projector,
            fresh=self.fresh,
            loaded=self.modules,
            clock=self.clock,
        )

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
            wake=Wake(self.app.recorder, self.app.hearing.heard()),
            observe=self.telemetry.tick,
        )

    def sender(self, worker: str) -> Sender:
        """What sends this store's webhooks from this process (serve and runner start one)."""
        watcher = Watcher(
            outbox=Outbox(app=self.app, clock=self.clock),
            fleet=self.fleet,
            fresh=self.fresh,
            clock=self.clock,
        )
        return Sender(
            webhooks=self.webhooks,
            settings=self.settings,
            clock=self.clock,
            worker=worker,
            watcher=watcher,
            failed=lambda event: self.telemetry.webhook_failures.labels(event).inc(),
        )

    def close(self) -> None:
        if self.loader is not None:
            self.loader.close()
        self.app.close()

    def __enter__(self) -> Runledger:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

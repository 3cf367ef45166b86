from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.application.store.ledger_app import LedgerApp, Streams
from runledger.projections.backend import Backend
from runledger.projections.projector import Projector
from runledger.projections.queries import Queries


@dataclass(frozen=True)
class Parts:
    """What every service reads and writes through, wired once by the composition root."""

    app: LedgerApp
    backend: Backend
    streams: Streams
    projector: Projector
    queries: Queries
    registry: Registry
    settings: Settings
    clock: Callable[[], datetime]


class Service:
    """A use case over the parts; names them as attributes for the code that uses them."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.app = parts.app
        self.backend = parts.backend
        self.streams = parts.streams
        self.projector = parts.projector
        self.queries = parts.queries
        self.registry = parts.registry
        self.settings = parts.settings
        self.clock = parts.clock

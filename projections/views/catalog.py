"""What a view is to the projector, and the list of them all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from runledger.projections.backend import Backend, Cursor
from runledger.projections.views.base import Event
from runledger.projections.views.definitions import DefinitionsView
from runledger.projections.views.deliveries import DeliveriesView
from runledger.projections.views.occurrences import OccurrencesView
from runledger.projections.views.resources import ResourcesView
from runledger.projections.views.run_log import RunLogView
from runledger.projections.views.runners import RunnersView
from runledger.projections.views.runs import RunsView
from runledger.projections.views.steps import StepsView
from runledger.projections.views.tokens import TokensView


class View(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def table(self) -> str: ...

    def topics(self) -> frozenset[str]: ...

    def process(
        self, backend: Backend, cursor: Cursor, events: Sequence[tuple[int, Event]]
    ) -> None: ...


def all_views() -> list[View]:
    return [
        RunsView(),
        ResourcesView(),
        StepsView(),
        RunLogView(),
        RunnersView(),
        TokensView(),
        DefinitionsView(),
        OccurrencesView(),
        DeliveriesView(),
    ]

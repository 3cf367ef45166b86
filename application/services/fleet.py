"""The runners, as each records itself: who is there, what each has loaded, and who is live."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError

from runledger.application.errors import NotFound
from runledger.application.modules.loader import ModuleStatus
from runledger.application.modules.protocol import Registry
from runledger.application.services.inputs import worker_name
from runledger.application.store.ledger_app import LedgerApp
from runledger.domain.runner_record import RunnerRecord, RunnerState, runner_state
from runledger.domain.values import made_storable, written_out
from runledger.projections.runners import RunnerRow, RunnerRows

MAX_LISTED = 1_000


@dataclass(frozen=True)
class Loaded:
    """What one runner process has loaded: the names it records when it joins."""

    modules: tuple[str, ...]
    actions: tuple[str, ...]
    leases: tuple[str, ...]

    @classmethod
    def of(cls, registry: Registry, statuses: Sequence[ModuleStatus]) -> Loaded:
        """The modules that loaded, and every module that registered an action or a lease
        (a test registers straight on a Registry, with no folder and no status)."""
        modules = {s.name for s in statuses if s.status == "loaded" and s.name}
        modules |= {action.module for action in registry.actions.values()}
        modules |= {lease.module for lease in registry.leases.values()}
        return cls(
            tuple(sorted(modules)), tuple(sorted(registry.actions)), tuple(sorted(registry.leases))
        )


@dataclass(frozen=True)
class Kit:
    """What a runner loaded, as its record keeps it: runners with the same kit serve the same
    runs, so they may divide them between them."""

    modules: tuple[str, ...]
    actions: tuple[str, ...]
    leases: tuple[str, ...]

    @classmethod
    def of(cls, row: RunnerRow) -> Kit:
        return cls(row.modules, row.actions, row.leases)


@dataclass(frozen=True)
class Ours:
    """A runner this process joined and has not left, with the seconds between its beats."""

    kit: Kit
    every_s: float


@dataclass(frozen=True)
class RunnerInfo(RunnerRow):
    """A runner as its rows say, and whether it is live, gone or stopped now."""

    state: RunnerState


@dataclass(frozen=True)
class Serving:
    """What the live runners serve between them."""

    modules: frozenset[str]
    actions: frozenset[str]
    leases: frozenset[str]

    def serves_module(self, name: str) -> bool:
        return name in self.modules

    def serves_action(self, action_id: str) -> bool:
        return action_id in self.actions

    def serves_lease(self, lease_id: str) -> bool:
        return lease_id in self.leases


class Fleet:
    """Runners join (a RunnerRecord), beat every tick (a row, not an event) and leave.

    The reads see every runner recorded before them: the rows catch the runners view up first.
    """

    def __init__(
        self,
        *,
        app: LedgerApp,
        rows: RunnerRows,
        gone_after_s: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.app = app
        self.rows = rows
        self.gone_after = timedelta(seconds=gone_after_s)
        self.clock = clock
        self.ours: dict[UUID, Ours] = {}
        """The runners joined through this fleet and not left: the division's "this process"."""

    def join(
        self,
        worker: str,
        modules: Iterable[str],
        actions: Iterable[str],
        leases: Iterable[str],
        every_s: float = 1.0,
        *,
        divides: bool = True,
    ) -> UUID:
        """Record a runner process as started, with its first heartbeat; answers its new id.
        ``every_s``: the seconds between its beats, for the division's bound. Not ``divides``
        (one tick, `runner --once`): this process still looks at every run."""
        name, runner_id, at = worker_name(worker), uuid4(), self.clock()
        kit = Kit(_names(modules), _names(actions), _names(leases))
        # The heartbeat first: if the save then fails, a row nobody reads is all that is left,
        # and the runner joins again under a new id; a record without a heartbeat would be a
        # runner shown as gone that never was.
        self.rows.beat(runner_id, at)
        self.app.save(
            RunnerRecord.start(
                runner_id,
                name,
                made_storable(socket.gethostname()),
                os.getpid(),
                list(kit.modules),
                list(kit.actions),
                list(kit.leases),
                at,
            )
        )
        if divides:
            self.ours[runner_id] = Ours(kit, every_s)
        return runner_id

    def beat(self, runner_id: UUID) -> None:
        self.rows.beat(runner_id, self.clock())

    def leave(self, runner_id: UUID) -> None:
        """Record that the runner stopped on purpose."""
        self.ours.pop(runner_id, None)
        try:
            record: RunnerRecord = self.app.repository.get(runner_id)
        except AggregateNotFoundError:
            raise NotFound(f"no runner {runner_id}") from None
        record.stop(self.clock())
        self.app.save(record)

    def listing(self, now: datetime, limit: int = 100) -> list[RunnerInfo]:
        """The runners that started last, newest first, each live, gone or stopped."""
        rows = self.rows.recent(min(max(limit, 1), MAX_LISTED))
        return [RunnerInfo(**asdict(row), state=self._state(row, now)) for row in rows]

    def serving(self, now: datetime) -> Serving:
        """The union of what the live runners loaded: started, not stopped, and beating
        within EVENT_RUNNER_GONE_S of ``now``."""
        live = self.rows.beating_since(now - self.gone_after)
        return Serving(
            frozenset(name for row in live for name in row.modules),
            frozenset(name for row in live for name in row.actions),
            frozenset(name for row in live for name in row.leases),
        )

    def _state(self, row: RunnerRow, now: datetime) -> RunnerState:
        return runner_state(row.stopped_at is not None, row.last_beat, now, self.gone_after)


def _names(names: Iterable[str]) -> tuple[str, ...]:
    """Sorted and storable: an id a module registered is its own text, never checked, so a
    NUL or a lone surrogate in one is written out rather than refused."""
    return tuple(sorted({written_out(str(name)) for name in names}))

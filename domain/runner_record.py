from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import DomainError

RunnerState = Literal["live", "gone", "stopped"]


class RunnerStopped(DomainError):
    """The runner has already recorded that it stopped."""


class RunnerRecord(Aggregate):
    """One runner process: what it had loaded when it started, and that it stopped.

    Its heartbeats are not events (see projections/runners.py): this stream holds two events at
    most, however long the runner lives.
    """

    class Started(Aggregate.Created):
        worker: str
        host: str
        pid: int
        modules: list[str]
        actions: list[str]
        leases: list[str]
        at: datetime

    class Stopped(Aggregate.Event):
        at: datetime

    @classmethod
    def start(
        cls,
        runner_id: UUID,
        worker: str,
        host: str,
        pid: int,
        modules: list[str],
        actions: list[str],
        leases: list[str],
        at: datetime,
    ) -> RunnerRecord:
        return cls._create(
            cls.Started,
            id=runner_id,
            worker=worker,
            host=host,
            pid=pid,
            modules=modules,
            actions=actions,
            leases=leases,
            at=at,
        )

    @event(Started)
    def __init__(
        self,
        worker: str,
        host: str,
        pid: int,
        modules: list[str],
        actions: list[str],
        leases: list[str],
        at: datetime,
    ) -> None:
        self.worker = worker
        self.host = host
        self.pid = pid
        self.modules = modules
        self.actions = actions
        self.leases = leases
        self.started_at = at
        self.stopped_at: datetime | None = None

    def stop(self, at: datetime) -> None:
        if self.stopped_at is not None:
            raise RunnerStopped(f"runner {self.worker} already stopped at {self.stopped_at}")
        self._stopped(at=at)

    @event(Stopped)
    def _stopped(self, at: datetime) -> None:
        self.stopped_at = at


def runner_state(
    stopped: bool, last_beat: datetime | None, now: datetime, gone_after: timedelta
) -> RunnerState:
    """A runner that said it stopped is stopped; one whose last heartbeat is older than the
    bound (or that never beat) is gone; the rest are live."""
    if stopped:
        return "stopped"
    if last_beat is None or now - last_beat > gone_after:
        return "gone"
    return "live"

"""Runs as production makes them, played in the World (tests/support/world.py): started from a
spec by ``Runs.start``, their steps dispatched by the runner's advance leg, ended by a person
advancing the last phase (or cancelling, or aborting). One clock, read by every runledger.

A step's params may script its perform (``World.make``): it names the resources in ``named``,
or answers ``answer`` as it is, or makes ``count`` things. A spec is then the script of what its
run will have made, and a test reads the ids of what was made from the natural keys (``made``,
``placeholder``, ``override``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from freezegun.api import FrozenDateTimeFactory

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.running.advancing import AdvanceReport
from runledger.application.settings import Settings
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND, Resource
from runledger.domain.spec import RunSpec
from tests.support.reading import the_step
from tests.support.world import LEASE

SPAWN, BUILD, ZONE = "world.spawn", "world.build", "world.zone"
"""The actions of the conftest's ``world``."""
GAME, GAME_SPAWN = "game", "game.spawn"
"""The conftest's ``game``: the World again, as the module ``game``."""
START = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
# Tests whose subject is not the back-off retry at once; those about it set their own delays.
NO_BACKOFF: dict[str, Any] = {"retry_delays_s": (0.0,)}
PHASE = "play"
RUNNER = "runner"
PERSON = "alice"


@dataclass
class Clock:
    """The one clock every part of a runledger reads; a test moves it. With ``frozen`` (the
    conftest's ``clock``), freezegun holds ``datetime.now`` to it as well, so a runledger on the
    default clock reads the same time as one opened on this one."""

    now: datetime = START
    frozen: FrozenDateTimeFactory | None = None

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.move_to(self.now + timedelta(seconds=seconds))

    def move_to(self, at: datetime) -> None:
        self.now = at
        if self.frozen is not None:
            self.frozen.move_to(at)


@contextmanager
def runledgers(url: str, registry: Registry, clock: Clock) -> Iterator[Callable[..., Runledger]]:
    """Open runledgers on one store, all reading one clock; every one is closed at the end."""
    opened: list[Runledger] = []

    def open_one(**settings: Any) -> Runledger:
        rl = bootstrap(Settings(database_url=url, **NO_BACKOFF | settings), registry, clock=clock)
        opened.append(rl)
        return rl

    try:
        yield open_one
    finally:
        for rl in opened:
            rl.close()


# --- specs ------------------------------------------------------------------------------------


def step(step_id: str, action: str, **params: Any) -> dict[str, Any]:
    return {"id": step_id, "action": action, "params": params}


def lease_step(
    step_id: str, target: str, value: Any = "storm", duration_s: float = 3600
) -> dict[str, Any]:
    return step(
        step_id, "core.lease", lease=LEASE, target=target, value=value, duration_s=duration_s
    )


def phase(
    phase_id: str, *steps: dict[str, Any], advance: str = "auto", after_s: float = 0
) -> dict[str, Any]:
    return {"id": phase_id, "steps": list(steps), "advance": advance, "after_s": after_s}


def spec(*phases: dict[str, Any], name: str = "festival") -> dict[str, Any]:
    return {"name": name, "phases": list(phases)}


def makes(
    step_id: str,
    *refs: str,
    action: str = SPAWN,
    kind: str = "creature",
    until: datetime | None = None,
) -> dict[str, Any]:
    """A step whose perform names ``refs``, each of ``kind`` and until ``until`` if given."""
    named: list[dict[str, Any]] = [{"kind": kind, "ref": ref} for ref in refs]
    if until is not None:
        named = [n | {"until": until.isoformat()} for n in named]
    return step(step_id, action, named=named)


def fails(step_id: str, action: str = SPAWN, error: str = "the answer was lost") -> dict[str, Any]:
    """A step whose perform fails: the placeholder it left stands for whatever it may have made."""
    return step(step_id, action, answer={"ok": False, "error": error})


def leases(
    target: str = "plaza", *, for_s: float = 3600, step_id: str = "weather"
) -> dict[str, Any]:
    """A core.lease step: the weather over ``target`` turns to storm for ``for_s`` seconds."""
    return lease_step(step_id, target, "storm", for_s)


# --- runs -------------------------------------------------------------------------------------


def start(
    rl: Runledger, *steps: dict[str, Any], name: str = "festival", run_id: UUID | None = None
) -> UUID:
    """A run of one phase that waits for a person once its steps are done."""
    return rl.runs.start(spec(phase(PHASE, *steps, advance="manual"), name=name), run_id)


def dispatch(rl: Runledger) -> AdvanceReport:
    """The runner's advance leg: every due step of every running run is dispatched once."""
    return rl.runs.advance_leg(RUNNER)


def dispatch_steps(rl: Runledger, run: UUID) -> None:
    """One run's due steps dispatched as the advance leg dispatches them, without the rest of the
    leg: no catch-up of the projections first, and no other run's steps."""
    started = rl.ledger.get_run(run)
    for planned in RunSpec.stored(started.spec).phases[started.phase].steps:
        found = the_step(rl, run, planned.id)
        if found.dispatchable(rl.clock()):
            rl.runs.dispatcher.dispatch(run, found, RUNNER)


def play(rl: Runledger, *steps: dict[str, Any], name: str = "festival") -> UUID:
    """A running run whose steps have each been dispatched once."""
    run = start(rl, *steps, name=name)
    dispatch(rl)
    return run


def complete(rl: Runledger, run: UUID) -> None:
    """A person advances the run's only phase: its steps are done, and the run completes."""
    assert rl.runs.advance(run, PERSON) == "completed"


def ended(rl: Runledger, *steps: dict[str, Any], name: str = "festival") -> UUID:
    """A completed run whose steps have each been dispatched once."""
    run = play(rl, *steps, name=name)
    complete(rl, run)
    return run


def ended_run(
    rl: Runledger, refs: list[str], *, action: str = SPAWN, name: str = "festival"
) -> tuple[UUID, list[UUID]]:
    """A completed run whose one step, spawn, made creatures ``refs``; and their entries."""
    run = ended(rl, makes("spawn", *refs, action=action), name=name)
    return run, made(run, "spawn", *refs)


# --- what a run made, by its natural keys -----------------------------------------------------


def key(run: UUID, step_id: str = "spawn") -> str:
    """A step's idempotency key, as ``Step.idempotency_key`` makes it."""
    return f"{run}:{step_id}"


def made(run: UUID, step_id: str, *refs: str, kind: str = "creature") -> list[UUID]:
    """The entries of what a step named, in the order named."""
    return [Resource.create_id(run, step_id, kind, ref) for ref in refs]


def placeholder(run: UUID, step_id: str) -> UUID:
    """The entry a step's dispatch recorded before it called the module."""
    return Resource.create_id(run, step_id, PLACEHOLDER_KIND, key(run, step_id))


def override(run: UUID, target: str = "plaza", step_id: str = "weather") -> UUID:
    """The entry of a lease step's override of ``target``."""
    return Resource.create_id(run, step_id, LEASE_KIND, f"{LEASE}#{target}")


def entry_of(rl: Runledger, entry_id: UUID) -> Resource:
    """An entry's aggregate, read from its own stream."""
    found: object = rl.app.repository.get(entry_id)
    assert isinstance(found, Resource)
    return found

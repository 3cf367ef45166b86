"""Runs as production makes them: started from a spec by ``Runs.start``, their steps dispatched
by the runner's advance leg and answered by the World's performs, ended by a person advancing
the last phase (or cancelling, or aborting).

A step's params script its perform: it names the resources in ``named``, or answers ``answer``
as it is. A spec is then the script of what its run will have made, and a test reads the ids of
what was made from the natural keys (``made``, ``placeholder``, ``override``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.services.running.advancing import AdvanceReport
from runledger.domain.resource import LEASE_KIND, PLACEHOLDER_KIND, Resource
from runledger.domain.spec import RunSpec
from tests.support.game import LEASE, lease_step, phase, spec, step
from tests.support.reading import the_step
from tests.support.world import World

SPAWN, BUILD, ZONE = "world.spawn", "world.build", "world.zone"
PHASE = "play"
RUNNER = "runner"
PERSON = "alice"


@dataclass
class PlayWorld(World):
    """The World, whose actions also perform and whose weather lease applies over a clear sky,
    so that runs from a spec can play in it."""

    def install(self, registry: Registry, *actions: str, budget_ms: int | None = None) -> None:
        module = registry.module(self.name)
        for action in actions:
            module.action(
                action,
                perform=performs,
                revert=self._revert(action),
                reconcile=self._reconcile(action),
                budget_ms=budget_ms,
            )
        module.lease(LEASE, apply=applies, restore=self._restore)


def performs(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
    """What a step's params script: ``answer`` as it is, or the resources ``named``."""
    if "answer" in params:
        return params["answer"]
    return {"ok": True, "resources": params.get("named", [])}


def applies(target: str, value: Any, run_id: str, idempotency_key: str) -> Any:
    return {"ok": True, "baseline": "clear", "applied": value}


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


def ended_run(
    rl: Runledger, refs: list[str], *, action: str = SPAWN, name: str = "festival"
) -> tuple[UUID, list[UUID]]:
    """A completed run whose one step, spawn, made creatures ``refs``; and their entries."""
    run = ended(rl, makes("spawn", *refs, action=action), name=name)
    return run, made(run, "spawn", *refs)


def answering(value: Any) -> Callable[..., Any]:
    """A scripted answer that is ``value`` whatever it is asked."""
    return lambda *_: value


def entry_of(rl: Runledger, entry_id: UUID) -> Resource:
    """An entry's aggregate, read from its own stream."""
    found: object = rl.app.repository.get(entry_id)
    assert isinstance(found, Resource)
    return found

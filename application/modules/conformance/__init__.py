"""The conformance kit: MODULE_API 2.0's promises checked against a real module, from pytest.

    from runledger.application.modules import conformance

    def test_lanterns_keep_the_module_contract(tmp_path: Path) -> None:
        settings = {"RUNLEDGER_LANTERNS_PATH": str(tmp_path / "world.json")}
        with conformance.loaded(Path("modules/lanterns"), settings) as registry:
            conformance.check(conformance.Subject(
                registry, action="lanterns.light", params={"count": 2},
                lease="lanterns.colour", target="gate", set_value=paint,
            ))

``check`` calls the module as core does (keyword arguments, under a deadline, its answers
copied into plain data and read by core's own answer models), sees the world through the
action's ``reconcile`` and the author's ``probe``, and raises ``NotConforming`` naming every
promise the module broke. MODULES.md says what each promise is for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from runledger.application.modules.conformance.calls import Broken, Calls
from runledger.application.modules.conformance.promises import (
    apply_twice_answers_the_first,
    drift_is_left_alone,
    perform_in_flight_makes_nothing,
    perform_is_idempotent,
    restore_by_key_puts_back_what_was_found,
    restore_with_nothing_applied_ends_the_key,
    revert_by_key_gives_back_what_it_made,
    revert_ends_the_key,
)
from runledger.application.modules.conformance.subject import NotConforming, Subject
from runledger.application.modules.host import ModuleContext, ModuleEvents, Registration
from runledger.application.modules.loader import Loader
from runledger.application.modules.protocol import Registry
from runledger.application.settings import module_scope

__all__ = ["NotConforming", "Subject", "check", "loaded"]


def _events(name: str) -> ModuleEvents:
    """A context's events that tell nobody: the kit has no ledger to reconcile or expire."""
    return ModuleEvents(name, lambda module: None, lambda *_: {"expired": 0})


@contextmanager
def loaded(
    source: Path | Callable[..., Any],
    settings: Mapping[str, str] | None = None,
    *,
    name: str = "module",
) -> Iterator[Registry]:
    """A registry holding one module: a module folder loaded by core's own loader, or a
    ``register(ctx)`` function hosted as the loader would, as ``name``. ``settings`` are the
    module's own (``RUNLEDGER_<NAME>_*``). Its closers run at the end."""
    registry = Registry()
    if isinstance(source, Path):
        loader = Loader(registry, _events, dict(settings or {}), environ=dict(os.environ))
        status = loader.load_folder(source)
        try:
            if status.status != "loaded":
                raise NotConforming([f"the module did not load: {status.reason}"])
            yield registry
        finally:
            loader.close()
        return
    registration = Registration(registry.module(name))
    scope = module_scope(name, frozenset(), dict(settings or {}), {})
    ctx = ModuleContext(
        name=name,
        site=name,
        folder=Path.cwd(),
        events=_events(name),
        settings=scope,
        registration=registration,
    )
    source(ctx=ctx)
    registration.close()
    try:
        yield registry
    finally:
        for closer in registration.closers:
            closer()


def check(subject: Subject) -> list[str]:
    """Run every check that applies; answers their names, or raises ``NotConforming``."""
    action = subject.registry.actions.get(subject.action)
    lease = subject.registry.leases.get(subject.lease) if subject.lease else None
    problems = []
    if action is None or action.perform is None or action.revert is None:
        problems.append(f"{subject.action} is not registered with both perform and revert")
    elif action.reconcile is None and subject.probe is None:
        problems.append(f"{subject.action} has no reconcile and no probe was given")
    if subject.lease and lease is None:
        problems.append(f"the lease {subject.lease} is not registered")
    if problems or action is None:
        raise NotConforming(problems)
    checks = [
        perform_is_idempotent,
        revert_by_key_gives_back_what_it_made,
        revert_ends_the_key,
        perform_in_flight_makes_nothing,
    ]
    if lease is not None:
        checks += [
            apply_twice_answers_the_first,
            restore_by_key_puts_back_what_was_found,
            restore_with_nothing_applied_ends_the_key,
        ]
        checks += [drift_is_left_alone] if subject.set_value else []
    module = Calls(subject, action, lease)
    for one in checks:
        try:
            one(module)
        except Broken as broken:
            problems.append(f"{one.__name__.replace('_', ' ')}: {broken}")
    if problems:
        raise NotConforming(problems)
    return [one.__name__ for one in checks]

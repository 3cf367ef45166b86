from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

MAX_BUDGET_MS = 3_600_000
ModuleFn = Callable[..., Any]
"""A module's function: plain or ``async``; it is always called with keyword arguments."""


@dataclass(frozen=True)
class Action:
    """A verb a step performs, and how to give back what it made (MODULE_API 2.0, MODULES.md).

    - ``perform(params=, idempotency_key=, run_id=)`` answers ``{ok: true, resources: [{kind,
      ref, payload?, member_key?, until?}]}``. Idempotent by key: a repeat makes nothing new and
      answers the same resources. Under a key a revert has ended it makes nothing and answers
      ``{ok: false, retry: false, error}``, even when it was already running as the revert came:
      checking the fence and making are one atomic step.
    - ``revert(resources=[{kind, ref, payload, member_key}], idempotency_key=, run_id=)`` gives
      back a group, or with no resources whatever it made under that key, and in the same
      atomic step ends (fences) the key. Answers ``{ok: true, failed?: [refs]}``,
      ``{ok: false, retry: false, error}`` (nothing will change until a person acts) or
      ``{ok: false, error}`` (try again).
    - ``reconcile(resources=[...], run_id=)`` answers ``{ok: true, in_force: [refs]}``.

    A call abandoned at its deadline may still answer, and its answer is recorded: a late
    answer must be as true as a timely one.

    For a definition's dry run (which never calls the three above), optionally:

    - ``params``: a pydantic model a step's params must validate against;
    - ``check(params=)``: answers a list of problems, each ``{field, problem}`` or a sentence
      (``[]`` when the params are fine). It must not change the world.
    """

    id: str
    module: str
    perform: ModuleFn | None = None
    revert: ModuleFn | None = None
    reconcile: ModuleFn | None = None
    budget_ms: int | None = None
    params: type[BaseModel] | None = None
    check: ModuleFn | None = None


@dataclass(frozen=True)
class Lease:
    """A time-bounded override of one value on one target (MODULE_API 2.0, MODULES.md).

    - ``apply(target=, value=, run_id=, idempotency_key=)`` answers ``{ok: true, baseline,
      applied}``. The first apply under a key records (target, baseline, applied); a repeat
      changes nothing and answers the first baseline and applied. Under a key a restore has
      ended it changes nothing and answers ``{ok: false, retry: false, error}``.
    - ``restore(baseline=, expected=, run_id=, target=, idempotency_key=)`` answers ``{ok:
      true}`` or ``{drifted: true, current}``, and ends the key. What the module recorded under
      the key wins over the arguments: the recorded baseline goes back only if the target still
      holds the recorded applied value; a target holding the baseline was restored before (ok);
      anything else is somebody else's value, left alone (drifted). With nothing recorded under
      the key, ``expected=None`` (core giving back an apply that never answered) is ok with
      nothing to put back; otherwise the same compare-and-set on the given baseline/expected.
    """

    id: str
    module: str
    apply: ModuleFn
    restore: ModuleFn


class RegistrationError(ValueError):
    """A module tried to register something core cannot accept."""


@dataclass
class Registry:
    """Every action and lease the loaded modules registered, by id."""

    actions: dict[str, Action] = field(default_factory=dict)
    leases: dict[str, Lease] = field(default_factory=dict)

    def module(self, name: str) -> ModuleRegistrar:
        return ModuleRegistrar(self, name)

    def action(self, action_id: str | None) -> Action | None:
        return None if action_id is None else self.actions.get(action_id)

    def lease_for_ref(self, ref: str) -> tuple[Lease, str] | None:
        """Find the lease an ``override`` entry names: its ref is ``<lease-id>#<target>``."""
        lease_id, sep, target = ref.partition("#")
        lease = self.leases.get(lease_id)
        return (lease, target) if lease and sep else None


@dataclass(frozen=True)
class ModuleRegistrar:
    """What a module's ``register`` receives: registration bound to that module's name."""

    registry: Registry
    module: str

    def action(
        self,
        action_id: str,
        *,
        perform: ModuleFn | None = None,
        revert: ModuleFn | None = None,
        reconcile: ModuleFn | None = None,
        budget_ms: int | None = None,
        params: type[BaseModel] | None = None,
        check: ModuleFn | None = None,
    ) -> None:
        if action_id in self.registry.actions:
            raise RegistrationError(f"action {action_id!r} is already registered")
        if budget_ms is not None and not 0 < budget_ms <= MAX_BUDGET_MS:
            raise RegistrationError(
                f"action {action_id!r}: budget_ms must be between 1 and {MAX_BUDGET_MS}"
            )
        if params is not None and not (isinstance(params, type) and issubclass(params, BaseModel)):
            raise RegistrationError(f"action {action_id!r}: params must be a pydantic model class")
        self.registry.actions[action_id] = Action(
            action_id, self.module, perform, revert, reconcile, budget_ms, params, check
        )

    def lease(self, lease_id: str, *, apply: ModuleFn, restore: ModuleFn) -> None:
        if "#" in lease_id or not lease_id:
            raise RegistrationError(f"lease id {lease_id!r} must be non-empty and without '#'")
        if lease_id in self.registry.leases:
            raise RegistrationError(f"lease {lease_id!r} is already registered")
        self.registry.leases[lease_id] = Lease(lease_id, self.module, apply, restore)

"""What a module author hands the conformance kit, and what the kit raises."""

from __future__ import annotations

from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from runledger.application.modules.protocol import Registry


class NotConforming(AssertionError):
    """The module broke promises of the module contract; ``problems`` says which, one each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        listed = "\n".join(f"- {problem}" for problem in problems)
        super().__init__(f"the module does not keep MODULE_API 2.0:\n{listed}")


@dataclass(frozen=True)
class Subject:
    """One action (and optionally one lease) of a loaded module, and how the kit may reach its
    world. ``params`` must make something new under every key (the kit uses fresh keys).

    - ``set_value(target, value)``: somebody else's write to the lease's target (the drift
      check, and a known value before each lease check); without it drift is not checked.
    - ``probe(key)``: the refs the world holds that ``key`` made, read from the world itself;
      without it the kit sees the world through the action's ``reconcile`` only.
    - ``slow_perform(seconds)``: a context manager within which a perform that starts waits
      ``seconds`` before it makes anything; with it a revert is sent while a perform waits.
      Without it (and besides it) ``races`` performs race a revert by their key.
    """

    registry: Registry
    action: str
    params: dict[str, Any] = field(default_factory=dict)
    lease: str | None = None
    target: str = "kit-target"
    values: tuple[Any, Any] = ("kit-one", "kit-two")
    set_value: Callable[[str, Any], object] | None = None
    probe: Callable[[str], Collection[str]] | None = None
    slow_perform: Callable[[float], AbstractContextManager[object]] | None = None
    races: int = 10

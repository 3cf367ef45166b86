"""What a module says of a step's params in a dry run: its params model and its dry-run check,
each called within a budget, their answers turned into problems naming the field."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError

from runledger.application.modules.deadline import Raised, Returned, TimedOut, call_with_deadline
from runledger.application.modules.protocol import Action
from runledger.domain.values import MAX_SHOWN, made_storable, plain_message


def params_problems(where: str, action: Action, params: dict[str, Any], budget: float) -> list[str]:
    """What the action's params model refuses in ``params``."""
    if action.params is None:
        return []
    outcome = call_with_deadline(_validate, {"model": action.params, "params": params}, budget)
    if isinstance(outcome, Returned) and isinstance(outcome.value, list):
        return [
            f"{where}.params{field_path(loc)}: {made_storable(str(msg))}"
            for loc, msg in outcome.value
        ]
    return [f"{where}.params: {_failed(action, 'params model', outcome)}"]


def check_problems(where: str, action: Action, params: dict[str, Any], budget: float) -> list[str]:
    """What the action's own dry-run check says of ``params``."""
    if action.check is None:
        return []
    outcome = call_with_deadline(action.check, {"params": copy.deepcopy(params)}, budget)
    if isinstance(outcome, Returned) and isinstance(outcome.value, list):
        said = [_module_problem(item) for item in outcome.value]
        if None not in said:
            return [f"{where}.params{p}" for p in said if p is not None]
    return [f"{where}.action: {_failed(action, 'dry-run check', outcome)}"]


def field_path(loc: Any) -> str:
    """A pydantic error's location as ``.a.b``, each part bounded."""
    return "".join(f".{made_storable(str(part), 64)}" for part in loc)


def _failed(action: Action, what: str, outcome: object) -> str:
    name = f'the {what} of "{action.id}"'
    if isinstance(outcome, TimedOut):
        return f"{name} did not answer within {outcome.seconds:g}s"
    if isinstance(outcome, Raised):
        return f"{name} failed: {made_storable(outcome.message)}"
    return f"{name} answered what core cannot read (a list of problems is expected)"


def _validate(model: type[BaseModel], params: dict[str, Any]) -> list[tuple[list[Any], str]]:
    try:
        model.model_validate(params)
    except ValidationError as error:
        return [(list(e["loc"]), plain_message(e)) for e in error.errors()]
    return []


def _module_problem(item: Any) -> str | None:
    """``{field, problem}`` as ``.field: problem``, a sentence as ``: sentence``; None when it is
    neither (the whole answer is then unreadable)."""
    if isinstance(item, str):
        return f": {made_storable(item, MAX_SHOWN)}"
    if isinstance(item, dict) and isinstance(item.get("problem"), str):
        field = item.get("field")
        path = f".{made_storable(field, 200)}" if isinstance(field, str) and field else ""
        return f"{path}: {made_storable(item['problem'], MAX_SHOWN)}"
    return None

"""The sandbox world's own commands: look at it, and break it as a test or an operator would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from runledger.application.builtin_modules.sandbox.module import SandboxWorld
from runledger.application.cli.console import console
from runledger.application.cli.display import safe_text
from runledger.application.cli.errors import guarded
from runledger.application.errors import BadRequest
from runledger.application.settings import Settings
from runledger.domain.values import check_text

KNOBS = "fail_perform, fail_revert, terminal, hang, throw, garbage or fail_refs"

app = typer.Typer(help="Look at and break the sandbox world.", no_args_is_help=True)
"""`runledger sandbox ...`"""


@app.command("show")
def show() -> None:
    """What is in the sandbox world now."""
    world = _world()
    for ref, thing in world.things().items():
        console.print(f"{safe_text(thing['kind']):<10} {safe_text(ref)}")
    console.print(
        f"weather:north = {safe_text(world.value('weather:north'))}, "
        f"weather:south = {safe_text(world.value('weather:south'))}"
    )


@app.command("fault")
def fault(
    scope: Annotated[str, typer.Argument(help="an action id (sandbox.spawn) or a ref")],
    knob: Annotated[str, typer.Argument(help=KNOBS)],
    value: Annotated[str, typer.Argument(help="a JSON value: a count, seconds, a list")] = "true",
) -> None:
    """Inject a fault into the sandbox's module."""
    guarded(lambda: _set_fault(_typed("SCOPE", scope), knob, value))
    console.print(f"{safe_text(scope)}: {safe_text(knob)} = {safe_text(value)}")


@app.command("set")
def set_value(target: str, value: str) -> None:
    """Change a world property as somebody else would (weather:north storm)."""
    world = _world()
    guarded(lambda: world.set_value(_typed("TARGET", target), _typed("VALUE", value)))
    console.print(f"{safe_text(target)} = {safe_text(value)}")


@app.command("vanish")
def vanish(ref: str) -> None:
    """Make a thing disappear without telling core."""
    gone = guarded(lambda: _world().vanish(_typed("REF", ref)))
    console.print("gone" if gone else f"no {safe_text(ref)} in the world")


@app.command("restart")
def restart() -> None:
    """Restart the game server: the module sees its reconnect and asks core to reconcile."""
    _world().restart()
    console.print("restarted")


def _typed(name: str, text: str) -> str:
    """An argument the sandbox's own SQLite file can hold; the world is a store too."""
    return check_text(text, name)


def _world() -> SandboxWorld:
    settings = guarded(Settings.from_env)
    path = settings.module_settings.get("RUNLEDGER_SANDBOX_PATH", "sandbox.sqlite3")
    return SandboxWorld(Path(path))


def _set_fault(scope: str, knob: str, value: str) -> None:
    try:
        _world().set_fault(scope, knob, json.loads(value))
    except ValueError as error:  # json.JSONDecodeError is one
        raise BadRequest(safe_text(error)) from None

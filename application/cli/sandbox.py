"""The sandbox world's own commands: look at it, and break it as a test or an operator would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from runledger.application.builtin_modules.sandbox.world import KNOBS as KNOB_NAMES
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.cli.answers import Changed, Thing, World, print_json
from runledger.application.cli.console import console
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.options import AsJson
from runledger.application.display import safe_repr, safe_text
from runledger.application.settings import Settings
from runledger.domain.values import check_text

KNOBS = ", ".join(KNOB_NAMES)

app = typer.Typer(help="Look at and break the sandbox world.", no_args_is_help=True)
"""`runledger sandbox ...`"""


@app.command("show")
def show(as_json: AsJson = False) -> None:
    """What is in the sandbox world now."""
    world = _world()
    if as_json:
        things = [Thing(ref=ref, kind=thing["kind"]) for ref, thing in world.things().items()]
        weather = {side: world.value(f"weather:{side}") for side in ("north", "south")}
        print_json(World(things=things, weather=weather))
        return
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
    as_json: AsJson = False,
) -> None:
    """Inject a fault into the sandbox's module."""
    set_to = guarded(lambda: _set_fault(_typed("SCOPE", scope), knob, value))
    if as_json:
        print_json(Changed(change=f"fault {knob}", target=scope, value=set_to))
    else:
        console.print(f"{safe_text(scope)}: {safe_text(knob)} = {safe_text(value)}")


@app.command("set")
def set_value(target: str, value: str, as_json: AsJson = False) -> None:
    """Change a world property as somebody else would (weather:north storm)."""
    world = _world()
    guarded(lambda: world.set_value(_typed("TARGET", target), _typed("VALUE", value)))
    if as_json:
        print_json(Changed(change="set", target=target, value=value))
    else:
        console.print(f"{safe_text(target)} = {safe_text(value)}")


@app.command("vanish")
def vanish(ref: str, as_json: AsJson = False) -> None:
    """Make a thing disappear without telling core."""
    gone = guarded(lambda: _world().vanish(_typed("REF", ref)))
    if as_json:
        print_json(Changed(change="vanish", target=ref, done=gone))
    else:
        console.print("gone" if gone else f"no {safe_text(ref)} in the world")


@app.command("restart")
def restart(as_json: AsJson = False) -> None:
    """Restart the game server: the module sees its reconnect and asks core to reconcile."""
    _world().restart()
    if as_json:
        print_json(Changed(change="restart"))
    else:
        console.print("restarted")


def _typed(name: str, text: str) -> str:
    """An argument the sandbox's own SQLite file can hold; the world is a store too."""
    return check_text(text, name)


def _world() -> SandboxWorld:
    settings = guarded(Settings.from_env)
    path = settings.module_settings.get("RUNLEDGER_SANDBOX_PATH", "sandbox.sqlite3")
    return SandboxWorld(Path(path))


def _set_fault(scope: str, knob: str, value: str) -> Any:
    """The fault's value as set; an unknown knob or a value that is no JSON is a usage error."""
    if knob not in KNOB_NAMES:
        raise Usage(f"unknown fault {safe_repr(knob)}; knobs are {KNOBS}")
    try:
        parsed = json.loads(value)
    except ValueError as error:  # json.JSONDecodeError is one
        raise Usage(f"VALUE: {safe_text(error)}") from None
    _world().set_fault(scope, knob, parsed)
    return parsed

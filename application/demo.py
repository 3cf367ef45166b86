"""The main job: a small festival on the sandbox world, end to end, with a few faults."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from uuid import UUID

from rich.console import Console

from application.bootstrap import Runledger
from application.console import show_runs
from application.sandbox import SandboxWorld

FESTIVAL: dict[str, Any] = {
    "name": "Harvest festival",
    "phases": [
        {"id": "gather", "advance": "manual", "steps": [
            {"id": "spawn-crows", "action": "sandbox.spawn",
             "params": {"kind": "crow", "count": 4}},
            {"id": "open-arena", "action": "sandbox.zone",
             "params": {"name": "arena", "duration_s": 1}},
            {"id": "fog-north", "action": "core.lease", "params": {
                "lease": "sandbox.weather", "target": "north", "value": "fog",
                "duration_s": 3600}},
        ]},
        {"id": "finale", "steps": [
            {"id": "spawn-king", "action": "sandbox.spawn",
             "params": {"kind": "scarecrow-king", "count": 1}},
        ]},
    ],
}
MARKET: dict[str, Any] = {"name": "Night market", "phases": [{"id": "open", "steps": [
    {"id": "spawn-stalls", "action": "sandbox.spawn", "params": {"kind": "stall", "count": 2}},
]}]}
PARADE: dict[str, Any] = {"name": "Parade", "phases": [{"id": "march", "advance": "manual",
    "steps": [{"id": "spawn-floats", "action": "sandbox.spawn",
               "params": {"kind": "float", "count": 3}}]}]}
DUEL: dict[str, Any] = {"name": "Duel at dusk", "phases": [{"id": "duel", "steps": [
    {"id": "spawn-duellists", "action": "sandbox.spawn",
     "params": {"kind": "duellist", "count": 2}},
    {"id": "ring", "action": "sandbox.zone", "params": {"name": "ring", "duration_s": 600}},
]}]}


def sandbox_world(rl: Runledger) -> SandboxWorld:
    return SandboxWorld(Path(rl.settings.module_settings.get(
        "RUNLEDGER_SANDBOX_PATH", "sandbox.sqlite3")))


def run_demo(rl: Runledger, console: Console) -> list[UUID]:
    """Four runs that end four ways, ticked as a runner would, then a person's retry."""
    world = sandbox_world(rl)
    world.clear_faults()
    world.set_value("weather:north", "clear")
    runner = rl.runner("demo-runner")
    festival, market, parade = (rl.runs.start(s) for s in (FESTIVAL, MARKET, PARADE))
    runner.tick()
    say = console.print
    say("[bold]Tick 1[/]: every first phase dispatched; the night market finished and was "
        "given back in the same tick.")
    for phase in rl.runs.describe(festival):
        say(f"  {phase.headline}")

    say("\nMeanwhile in the world:")
    world.set_value("weather:north", "storm")
    say("  a game master sets the north's weather to storm by hand (the festival holds it)")
    crow = next(e.ref for e in rl.queries.entries(festival) if e.kind == "crow")
    world.set_fault(crow, "fail_revert", 1)
    say(f"  {crow} will refuse its first revert (a shard hiccup)")
    rl.ledger.cancel_run(parade, "alice", cleanup=False)
    say("  alice cancels the parade and keeps its floats in the world")
    duel = rl.runs.start(DUEL)
    world.set_fault("sandbox.zone", "fail_perform", 3)
    say("  the duel starts, but its ring cannot be opened")
    time.sleep(1.3)
    say("  the arena zone reaches its deadline and the world closes it")

    say("\n[bold]bea[/] advances the festival; the runner ticks on:")
    rl.runs.advance(festival, "bea")
    for tick in range(2, 6):
        report = runner.tick()
        advance = report.advance
        say(f"  tick {tick}: {count(advance.succeeded, 'step')} done, {advance.failed} failed, "
            f"{count(advance.completed, 'run')} completed, {advance.aborted} aborted; "
            f"cleanup worked {count(len(report.swept), 'run')}")
        if tick == 2:
            duellist = next(e.ref for e in rl.queries.entries(duel) if e.kind == "duellist")
            world.set_fault(duellist, "terminal", True)
            say(f"    (the shard now refuses, for good, to take {duellist} back)")
    runs = [festival, market, parade, duel]
    show_runs(console, rl, runs, with_log=True)

    say("\n[bold]What needs a person[/]:")
    for run in rl.queries.runs(runs, rl.clock(), rl.settings.max_revert_attempts):
        for entry in rl.queries.unresolved_entries(run.run_id):
            say(f"  {run.name}: {entry.name} is {entry.status} — {entry.last_error}")
    duel_row = rl.queries.run(duel, rl.clock(), rl.settings.max_revert_attempts)
    if duel_row and duel_row.cleanup_status == "incomplete":
        world.clear_faults()
        say("\nThe shard is mended; [bold]ops[/] asks for the duel's cleanup once more:")
        summary = rl.cleanup.manual_cleanup(duel, "ops")
        say(f"  attempted {summary.attempted}, reverted {summary.reverted}, "
            f"remaining {summary.remaining}")
    show_runs(console, rl, runs, with_log=False)
    left = world.things()
    say(f"\nLeft in the world: {', '.join(left) or 'nothing'}"
        " (alice's floats stay; she chose to keep them)")
    say(f"North weather: {world.value('weather:north')} (the game master's storm, left alone)")
    calls = {key.partition(":")[2]: n for key, n in world.calls("revert:sandbox.spawn").items()
             if UUID(key.partition(":")[0]) in runs}
    say(f"Revert calls per spawn step: {calls}")
    return runs


def count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"

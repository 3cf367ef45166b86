"""The main job: a small festival on the sandbox world, end to end, with a few faults."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from rich.console import Console
from rich.text import Text

from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.cli.console import console, show_runs
from runledger.application.cli.demo_specs import DUEL, FESTIVAL, MARKET, PARADE
from runledger.application.cli.errors import guarded
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest
from runledger.application.runledger import Runledger
from runledger.application.services.running.runner import Runner, TickReport
from runledger.application.services.spec_input import parse_spec
from runledger.application.settings import Settings

EARLIER_RUNS = 100  # running runs looked at for ones an earlier demo left behind
Say = Callable[..., None]


def sandbox_world(rl: Runledger) -> SandboxWorld:
    return SandboxWorld(
        Path(rl.settings.module_settings.get("RUNLEDGER_SANDBOX_PATH", "sandbox.sqlite3"))
    )


def demo() -> None:
    """A small festival on the sandbox world, end to end: given back, left alone, and what needs
    a person."""
    logging.basicConfig(level=logging.ERROR)
    settings, where = prepared()
    with guarded(lambda: bootstrap(settings)) as rl:
        console.print(
            Text.assemble(
                ("runledger demo", "bold"), f" on the {safe_text(where)}, with the sandbox world\n"
            )
        )
        run_demo(rl, console)


def prepared() -> tuple[Settings, str]:
    """The demo's settings and the store it plays into, initialised (said as where it is): what
    `runledger demo` and `runledger serve --demo` both start from."""
    settings = demo_settings(guarded(Settings.from_env))
    return settings, guarded(lambda: init_store(settings))


def demo_settings(settings: Settings) -> Settings:
    budget = {"RUNLEDGER_SANDBOX_BUDGET_MS": "500"} | settings.module_settings
    settings = settings.model_copy(update={"module_settings": budget})
    if not os.environ.get("EVENT_RETRY_DELAYS_S"):
        # The story's retries, half a second apart rather than 5, 30 and 120 s.
        settings = settings.model_copy(update={"retry_delays_s": (0.5,), "retry_jitter": 0.0})
    return settings


def run_demo(rl: Runledger, console: Console) -> list[UUID]:
    """Four runs that end four ways, ticked as a runner would, then a person's retry. Run again
    in the same folder, it tells the same story: earlier demos stay in the store as history."""

    def say(*parts: str | tuple[str, str]) -> None:
        # Text, never markup: names, refs and errors are printed as they are.
        console.print(Text.assemble(*parts))

    world = sandbox_world(rl)
    world.clear_faults()
    runner = rl.runner("demo-runner")
    _settle_earlier_demos(rl, say)
    world.set_value("weather:north", "clear")
    festival, market, parade = (rl.runs.start(s) for s in (FESTIVAL, MARKET, PARADE))
    _first_tick(rl, runner, festival, say)
    duel = _meanwhile(rl, world, festival, parade, say)
    _ticks(rl, runner, world, festival, duel, say)
    runs = [festival, market, parade, duel]
    show_runs(console, rl.answers, runs, with_log=True)
    _needs_a_person(rl, world, runs, duel, say)
    show_runs(console, rl.answers, runs, with_log=False)
    _the_world_after(rl, world, runs, say)
    return runs


def _first_tick(rl: Runledger, runner: Runner, festival: UUID, say: Say) -> None:
    runner.tick()
    say(
        ("Tick 1", "bold"),
        ": every first phase dispatched; the night market finished and was "
        "given back in the same tick.",
    )
    for phase in rl.runs.describe(festival):
        say(f"  {phase.headline}")


def _meanwhile(rl: Runledger, world: SandboxWorld, festival: UUID, parade: UUID, say: Say) -> UUID:
    """Somebody else changes the world, a shard hiccups, alice keeps her parade and the duel
    starts unable to open its ring. Answers the duel."""
    say("\nMeanwhile in the world:")
    world.set_value("weather:north", "storm")
    say("  a game master sets the north's weather to storm by hand (the festival holds it)")
    crow = first_ref(rl, festival, "crow")
    world.set_fault(crow, "fail_revert", 1)
    say(f"  {crow} will refuse its first revert (a shard hiccup)")
    rl.ledger.cancel_run(parade, "alice", cleanup=False)
    say("  alice cancels the parade and keeps its floats in the world")
    duel = rl.runs.start(DUEL)
    world.set_fault("sandbox.zone", "fail_perform", 3)
    say("  the duel starts, but its ring cannot be opened")
    time.sleep(1.3)
    say("  the arena zone reaches its deadline and the world closes it")
    return duel


def _ticks(
    rl: Runledger, runner: Runner, world: SandboxWorld, festival: UUID, duel: UUID, say: Say
) -> None:
    pause = min(1.0, max(rl.settings.retry_delays_s, default=0.0))
    say(
        "\n",
        ("bea", "bold"),
        f" advances the festival; the runner ticks on, every {pause:g}s "
        "(a failed attempt waits its back-off, EVENT_RETRY_DELAYS_S, before the next):",
    )
    _advance(rl, festival, say)
    for tick in range(2, 6):
        if tick > 2:
            time.sleep(pause)
        say(_ticked(tick, runner.tick()))
        if tick == 2:
            duellist = first_ref(rl, duel, "duellist")
            world.set_fault(duellist, "terminal", True)
            say(f"    (the shard now refuses, for good, to take {duellist} back)")


def _ticked(tick: int, report: TickReport) -> str:
    advance = report.advance
    return (
        f"  tick {tick}: {count(advance.succeeded, 'step')} done, {advance.failed} failed, "
        f"{count(advance.completed, 'run')} completed, {advance.aborted} aborted; "
        f"cleanup worked {count(len(report.swept), 'run')}"
    )


def _settle_earlier_demos(rl: Runledger, say: Say) -> None:
    """An earlier demo that stopped half-way left runs going that would hold the world the
    story needs (the north's weather, above all): they are aborted and given back first."""
    ours = [parse_spec(s).model_dump(mode="json") for s in (FESTIVAL, MARKET, PARADE, DUEL)]
    left = [r for r in rl.queries.running_runs(EARLIER_RUNS) if rl.ledger.get_run(r).spec in ours]
    if not left:
        return
    for run in left:
        rl.ledger.abort_run(run, "an earlier demo stopped before its end")
    rl.cleanup.sweep("demo-runner")
    say(
        f"An earlier demo stopped before its end: {count(len(left), 'run')} it left running "
        "are aborted and given back first.\n"
    )


def _advance(rl: Runledger, festival: UUID, say: Say) -> None:
    """bea advances the festival; when something keeps it back (another run holding the north,
    say), the demo says what, and the festival's failing step ends it in the ticks to come."""
    try:
        rl.runs.advance(festival, "bea")
    except BadRequest as refused:
        why = next(
            (p.why_not_advanced for p in rl.runs.describe(festival) if p.why_not_advanced), None
        )
        say(("  bea cannot: ", "red"), str(refused), f" ({why})" if why else "")


def _needs_a_person(
    rl: Runledger, world: SandboxWorld, runs: list[UUID], duel: UUID, say: Say
) -> None:
    say("\n", ("What needs a person", "bold"), ":")
    for run in rl.queries.runs(runs, rl.clock(), rl.settings.max_revert_attempts):
        for entry in sorted(rl.queries.unresolved_entries(run.run_id), key=lambda e: e.name):
            say(f"  {run.name}: {entry.name} is {entry.status} — {entry.last_error}")
    duel_row = rl.queries.run(duel, rl.clock(), rl.settings.max_revert_attempts)
    if duel_row and duel_row.cleanup_status == "incomplete":
        world.clear_faults()
        say("\nThe shard is mended; ", ("ops", "bold"), " asks for the duel's cleanup once more:")
        summary = rl.cleanup.manual_cleanup(duel, "ops")
        say(
            f"  attempted {summary.attempted}, reverted {summary.reverted}, "
            f"remaining {summary.remaining}"
        )


def _the_world_after(rl: Runledger, world: SandboxWorld, runs: list[UUID], say: Say) -> None:
    made = {e.ref for run in runs for e in rl.queries.entries(run)}
    left = sorted(ref for ref in world.things() if ref in made)
    say(
        f"\nLeft in the world: {', '.join(left) or 'nothing'}"
        " (alice's floats stay; she chose to keep them)"
    )
    say(f"North weather: {world.value('weather:north')} (the game master's storm, left alone)")
    calls = {key.partition(":"): n for key, n in world.calls("revert:sandbox.spawn").items()}
    ours = sorted(
        (runs.index(UUID(run)), step, n) for (run, _, step), n in calls.items() if UUID(run) in runs
    )
    per_step = {step: n for _, step, n in ours}
    calls_per_step = ", ".join(f"{step} {n}" for step, n in per_step.items()) or "none"
    say(f"Revert calls per spawn step: {calls_per_step}")


def first_ref(rl: Runledger, run: UUID, kind: str) -> str:
    return min(e.ref for e in rl.queries.entries(run) if e.kind == kind)


def count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"

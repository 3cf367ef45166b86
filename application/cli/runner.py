"""Being a runner from the terminal: one tick, or ticking until stopped."""

from __future__ import annotations

import os
import signal
import socket
import threading
from typing import Annotated

import typer
from rich.text import Text

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.answers import Advance, Tick, print_json
from runledger.application.cli.console import cleanup_words, console
from runledger.application.cli.errors import guarded
from runledger.application.cli.options import AsJson, interval_s, worker_checked
from runledger.application.display import safe_text
from runledger.application.plain import counted
from runledger.application.services.running.advancing import AdvanceReport
from runledger.application.telemetry import configure_logging


def tick(
    worker: Annotated[str, typer.Option(help="this runner's name", callback=worker_checked)] = "",
    as_json: AsJson = False,
) -> None:
    """Run one tick as a runner: join, the advance leg, the cleanup leg, leave."""
    with guarded(bootstrap) as rl:
        name = worker or default_worker()
        report = guarded(guarded(lambda: rl.runner(name)).once)
        answer = Tick(
            worker=name,
            started=report.started.started,
            advance=Advance.model_validate(report.advance),
            swept=guarded(
                lambda: [rl.answers.cleanup_summary(r, s) for r, s in report.swept.items()]
            ),
        )
    if as_json:
        print_json(answer)
        return
    for run_id in answer.started:
        console.print(f"started run {run_id} from a due occurrence")
    console.print(f"advance: {advance_words(report.advance)}")
    for summary in answer.swept:
        console.print(Text.assemble(f"cleanup {summary.run_id}: ", *cleanup_words(summary)))


def advance_words(done: AdvanceReport) -> str:
    """What the advance leg did, in words."""
    return (
        f"{counted(done.runs, 'run')} looked at, {counted(done.dispatched, 'step')} dispatched "
        f"({done.succeeded} done, {done.failed} failed), "
        f"{counted(done.phases_advanced, 'phase')} advanced, "
        f"{counted(done.completed, 'run')} completed, {done.aborted} aborted"
    )


def runner(
    interval: Annotated[float, typer.Option(help="seconds between ticks")] = 1.0,
    worker: Annotated[str, typer.Option(help="this runner's name", callback=worker_checked)] = "",
) -> None:
    """Tick until stopped. SIGTERM or Ctrl-C finishes the call in flight and claims nothing new."""
    guarded(lambda: interval_s("--interval", interval))
    configure_logging()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with guarded(bootstrap) as rl:
        name = worker or default_worker()
        console.print(f"runner {safe_text(name)} ticking every {interval:g}s")
        ticks = guarded(lambda: rl.runner(name)).run(interval, stop)
        console.print(f"runner {safe_text(name)} stopped after {ticks} ticks")


def default_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"

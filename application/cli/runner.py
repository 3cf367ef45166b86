"""Being a runner from the terminal: one tick, or ticking until stopped."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from typing import Annotated

import typer

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.console import console
from runledger.application.cli.display import safe_text
from runledger.application.cli.errors import guarded


def tick(worker: Annotated[str, typer.Option(help="this runner's name")] = "") -> None:
    """Run one tick as a runner: join, the advance leg, the cleanup leg, leave."""
    with guarded(bootstrap) as rl:
        runner = guarded(lambda: rl.runner(worker or default_worker()))
        report = guarded(runner.once)
        console.print(f"advance: {safe_text(report.advance)}")
        for run_id, summary in report.swept.items():
            console.print(f"cleanup {run_id}: {safe_text(summary)}")


def runner(
    interval: Annotated[float, typer.Option(help="seconds between ticks")] = 1.0,
    worker: Annotated[str, typer.Option(help="this runner's name")] = "",
) -> None:
    """Tick until stopped. SIGTERM or Ctrl-C finishes the call in flight and claims nothing new."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
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

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
from runledger.application.cli.errors import Usage, guarded
from runledger.application.cli.options import AsJson, interval_s, worker_checked
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest
from runledger.application.fleet_metrics import ModulesCollector
from runledger.application.metrics_server import MetricsServer, RunnerMetrics
from runledger.application.plain import counted
from runledger.application.runledger import Runledger
from runledger.application.services.running.advancing import AdvanceReport
from runledger.application.services.running.runner import Runner
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
    metrics_port: Annotated[
        int,
        typer.Option(
            envvar="RUNLEDGER_RUNNER_METRICS_PORT",
            help="serve this runner's Prometheus metrics at http://HOST:PORT/metrics (0: none)",
        ),
    ] = 0,
    metrics_host: Annotated[
        str,
        typer.Option(
            envvar="RUNLEDGER_RUNNER_METRICS_HOST", help="address the metrics port listens on"
        ),
    ] = "127.0.0.1",
) -> None:
    """Tick until stopped. SIGTERM or Ctrl-C finishes the call in flight and claims nothing new."""
    guarded(lambda: interval_s("--interval", interval))
    guarded(lambda: port_checked(metrics_port))
    configure_logging()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with guarded(bootstrap) as rl:
        name = worker or default_worker()
        ticking = guarded(lambda: rl.runner(name))
        served = guarded(lambda: metrics(rl, ticking, metrics_host, metrics_port))
        sending = rl.sender(name).started(stop)  # webhooks, sent from every runner and serve
        console.print(f"runner {safe_text(name)} ticking every {interval:g}s")
        try:
            ticks = ticking.run(interval, stop)
        finally:
            sending.join(SENDING_S)
            if served is not None:
                served.stop()
        console.print(f"runner {safe_text(name)} stopped after {ticks} ticks")


def metrics(rl: Runledger, ticking: Runner, host: str, port: int) -> MetricsServer | None:
    """The runner's metrics on their port, or None without one; a port taken is said plainly."""
    if not port:
        return None
    registry = rl.telemetry.registry
    registry.register(RunnerMetrics(ticking, rl.telemetry))
    registry.register(ModulesCollector(lambda: rl.modules))
    try:
        served = MetricsServer.start(registry, host, port)
    except OSError as error:
        # Not a usage error (exit 1): the port is taken or the address is not this host's.
        said = f"--metrics-port: cannot listen on {host}:{port}: {error.strerror or error}"
        raise BadRequest(said) from None
    console.print(f"runner metrics at http://{safe_text(host)}:{port}/metrics")
    return served


def port_checked(port: int) -> None:
    if not 0 <= port < 65536:
        raise Usage(f"--metrics-port: must be a port from 1 to 65535 (0: none), not {port}")


SENDING_S = 10.0
"""How long a stopping runner waits for a webhook in flight (its POST is bounded at 5 s)."""


def default_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"

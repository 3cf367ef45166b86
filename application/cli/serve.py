"""`runledger serve`: the HTTP API, and in the same process a runner, until SIGTERM."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Annotated

import typer
import uvicorn

from runledger.application.api.app import create_app
from runledger.application.bootstrap import Runledger, bootstrap
from runledger.application.cli.errors import guarded
from runledger.application.cli.runner import default_worker
from runledger.application.errors import BadRequest
from runledger.application.telemetry import configure_logging

log = logging.getLogger("runledger.serve")


def _runner_thread(
    rl: Runledger, worker: str, interval: float, stop: threading.Event
) -> threading.Thread:
    """A runner on its own composition root (the services keep per-tick state on themselves),
    sharing the modules this process loaded."""
    own = bootstrap(rl.settings, rl.registry, clock=rl.clock, telemetry=rl.telemetry)
    own.modules = rl.modules

    def work() -> None:
        try:
            own.runner(worker).run(interval, stop)
        finally:
            own.close()

    thread = threading.Thread(target=work, name=f"runner-{worker}", daemon=True)
    thread.start()
    return thread


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    runner: Annotated[
        bool, typer.Option("--runner/--no-runner", help="also tick as a runner (default)")
    ] = True,
    interval: Annotated[float, typer.Option(help="seconds between ticks")] = 1.0,
    worker_name: Annotated[
        str, typer.Option("--worker", help="the runner's name (default: host:pid)")
    ] = "",
) -> None:
    """Serve the admin HTTP API (and tick as a runner) until SIGTERM or Ctrl-C."""
    configure_logging()
    guarded(lambda: None if 0 < port < 65536 else _bad_port(port))
    with guarded(bootstrap) as rl:
        stop = threading.Event()
        thread = (
            _runner_thread(rl, worker_name or default_worker(), interval, stop) if runner else None
        )
        config = uvicorn.Config(
            create_app(rl), host=host, port=port, log_config=None, access_log=False
        )
        log.info("serving on http://%s:%d (runner: %s)", host, port, "yes" if runner else "no")
        # uvicorn turns SIGTERM / SIGINT into a graceful stop, then puts back the handlers it
        # found and raises the signal again: with the defaults that kills the process before
        # the runner below has stopped and recorded it. Found handlers that do nothing.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: None)
        try:
            uvicorn.Server(config).run()  # returns on SIGTERM / SIGINT, requests finished
        finally:
            stop.set()
            if thread is not None:
                thread.join()
        log.info("stopped")


def _bad_port(port: int) -> None:
    raise BadRequest(f"--port: {port} is not a port (1-65535)")

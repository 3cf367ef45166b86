"""`runledger serve`: the console and the HTTP API, and in the same process a runner, until
SIGTERM or Ctrl-C; with --demo, the demo's story played into the store as it starts."""

from __future__ import annotations

import logging
import signal
import socket
import threading
from typing import Annotated

import typer
from rich.console import Console

from runledger.application.bootstrap import bootstrap
from runledger.application.cli.demo import prepared, run_demo
from runledger.application.cli.errors import OPERATOR_ERRORS, Usage, guarded
from runledger.application.cli.options import interval_s, worker_checked
from runledger.application.cli.runner import SENDING_S, default_worker
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.application.telemetry import configure_logging

log = logging.getLogger("runledger.serve")

DEMO_PERSON = "demo"
DEMO_HELP = (
    "print the console's address and a new sign-in token for "
    f'"{DEMO_PERSON}", an operator, and play the demo\'s story into the store while the console '
    "shows it: ./runledger.sqlite3, or RUNLEDGER_DATABASE_URL (PostgreSQL works too)"
)
ALL_ADDRESSES = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    runner: Annotated[
        bool, typer.Option("--runner/--no-runner", help="also tick as a runner (default)")
    ] = True,
    interval: Annotated[float, typer.Option(help="seconds between ticks")] = 1.0,
    worker_name: Annotated[
        str,
        typer.Option(
            "--worker", help="the runner's name (default: host:pid)", callback=worker_checked
        ),
    ] = "",
    demo: Annotated[bool, typer.Option("--demo", help=DEMO_HELP)] = False,
) -> None:
    """Serve the console at / and the admin HTTP API under /admin (and tick as a runner) until
    SIGTERM or Ctrl-C."""
    guarded(lambda: None if 0 < port < 65536 else _bad_port(port))
    guarded(lambda: interval_s("--interval", interval))
    configure_logging()
    listening = guarded(lambda: listen(host, port))
    settings, where = prepared() if demo else (guarded(Settings.from_env), "")
    with guarded(lambda: bootstrap(settings)) as rl:
        stop = threading.Event()
        sending = rl.sender(worker_name or default_worker()).started(stop)  # webhooks
        thread = (
            _worker_thread(rl, worker_name or default_worker(), interval, stop, demo, runner)
            if demo or runner
            else None
        )
        if demo:
            issued = guarded(lambda: rl.tokens.issue(DEMO_PERSON, "operator", by="serve --demo"))
            _welcome(address(host, port), issued.secret, where)
        # The server's parts load when it starts: every other command starts without them.
        import uvicorn

        from runledger.application.asgi import create_app

        # Forwarded headers are trusted by RUNLEDGER_TRUSTED_PROXIES alone (forwarded.py): uvicorn's
        # own handling would believe them from 127.0.0.1 before that setting is read.
        config = uvicorn.Config(
            create_app(rl), log_config=None, access_log=False, proxy_headers=False
        )
        log.info("serving on %s (runner: %s)", address(host, port), "yes" if runner else "no")
        # uvicorn turns SIGTERM / SIGINT into a graceful stop, then puts back the handlers it
        # found and raises the signal again: with the defaults that kills the process before
        # the runner below has stopped and recorded it. Found handlers that do nothing.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: None)
        try:
            uvicorn.Server(config).run([listening])  # returns on SIGTERM / SIGINT
        finally:
            stop.set()
            if thread is not None:
                thread.join()
            sending.join(SENDING_S)
        log.info("stopped")


def _worker_thread(
    rl: Runledger, worker: str, interval: float, stop: threading.Event, story: bool, ticks: bool
) -> threading.Thread:
    """The demo's story (with --demo), then a runner (unless --no-runner), on a composition root
    of their own (the services keep per-tick state on themselves), sharing the modules this
    process loaded. The story plays while the console already answers, so a person sees it."""
    own = bootstrap(rl.settings, rl.registry, clock=rl.clock, telemetry=rl.telemetry)
    own.modules = rl.modules

    def work() -> None:
        try:
            if story:
                _play(own)
            if ticks:
                from runledger.application.metrics_server import RunnerMetrics

                runner = own.runner(worker)
                own.telemetry.registry.register(RunnerMetrics(runner, own.telemetry))
                runner.run(interval, stop)
        finally:
            own.close()

    thread = threading.Thread(target=work, name=f"runner-{worker}", daemon=True)
    thread.start()
    return thread


def _play(rl: Runledger) -> None:
    """The demo's story, told to nobody: the terminal keeps the address and the token on top,
    and the console shows the runs."""
    try:
        runs = run_demo(rl, Console(quiet=True))
        ended = rl.queries.runs(runs, rl.clock(), rl.settings.max_revert_attempts)
    except OPERATOR_ERRORS as error:
        log.error("the demo's story stopped: %s", safe_text(error, 2_000))
        return
    said = "; ".join(f"{r.name}: {r.status}, cleanup {r.cleanup_status}" for r in ended)
    log.info("the demo's story has played (%s)", safe_text(said, 2_000))


def _welcome(url: str, secret: str, where: str) -> None:
    """The address and the token, first and plain (no wrapping: both are copied by hand)."""
    lines = (
        "",
        f"  runledger console   {url}",
        f"  sign-in token       {secret}",
        "",
        f"  Open the address and paste the token: you are {DEMO_PERSON}, an operator.",
        f"  The demo's story plays into the {safe_text(where, 200)} as you look,",
        "  then a runner keeps ticking. Ctrl-C stops.",
        "  (runledger demo tells the same story in the terminal.)",
        "",
    )
    print("\n".join(lines), flush=True)


def address(host: str, port: int) -> str:
    """Where a browser on this machine finds the console."""
    shown = ALL_ADDRESSES.get(host, host)
    return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, made before anything is played or printed: the address said is one
    that answers, and a port already taken is one sentence, not a log line after the banner."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP by name, as uvicorn's own bind does: asyncio sets TCP_NODELAY only on sockets
    # that say so, and without it every keep-alive answer waits for the client's delayed ACK
    # (scripts/MEASUREMENTS.md, "TCP_NODELAY on serve's socket").
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
        listening.listen(2048)
    except OSError as error:
        listening.close()
        raise BadRequest(
            f"--host/--port: cannot listen on {host}:{port} ({error.strerror or error})"
        ) from None
    return listening


def _bad_port(port: int) -> None:
    raise Usage(f"--port: {port} is not a port (1-65535)")

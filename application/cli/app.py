from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar
from uuid import UUID

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from runledger import __version__
from runledger.application.bootstrap import Runledger, bootstrap, init_store
from runledger.application.cli import fleet as fleet_cli
from runledger.application.cli import operator as operator_cli
from runledger.application.cli import sandbox as sandbox_cli
from runledger.application.cli import serve as serve_cli
from runledger.application.cli import tokens as tokens_cli
from runledger.application.cli.console import LOG_LINES, show_runs
from runledger.application.cli.demo import run_demo
from runledger.application.cli.display import safe_text
from runledger.application.cli.operator import moment, within
from runledger.application.errors import STORE_ERRORS, NotFound, RunledgerError, store_error
from runledger.application.modules.threads import left_behind
from runledger.application.settings import Settings, store_config
from runledger.domain.errors import DomainError

app = typer.Typer(
    help="runledger: what a game-event run changed, and giving all of it back.",
    no_args_is_help=True,
    add_completion=False,
)
# No string printed is ever read as markup or emoji codes: styles come from rich.text.Text only.
console = Console(highlight=False, markup=False, emoji=False)
T = TypeVar("T")
MAX_RUNS = 1_000
MAX_LOG_LINES = 10_000
SHUTDOWN_GRACE_S = 2.0
"""How long, after a command, threads a module left behind are waited for before exiting."""


def _show_version(asked: bool) -> None:
    if asked:
        console.print(f"runledger {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    pass


OPERATOR_ERRORS: tuple[type[BaseException], ...] = (RunledgerError, DomainError, *STORE_ERRORS)
"""Every error an operator can act on: one sentence and exit code 2, never a traceback."""


def _guarded(action: Callable[[], T]) -> T:
    try:
        return action()
    except OPERATOR_ERRORS as error:
        _fail(error)


def _fail(error: BaseException) -> NoReturn:
    console.print(Text.assemble(("runledger: ", "red"), _sentence(error)), soft_wrap=True)
    raise typer.Exit(2)


def _sentence(error: BaseException) -> str:
    try:
        config = store_config(Settings.from_env().database_url)
    except RunledgerError:
        config = None
    path = config.env.get("SQLITE_DBNAME") if config else None
    if isinstance(error, OSError) and not _names(error, path):
        # a spec, a module folder, the sandbox's file: not the store, so not named as it
        return safe_text(f"{error.filename or 'a file'}: {error.strerror or error}", 2_000)
    if isinstance(error, STORE_ERRORS):
        error = store_error(error, config.display if config else "store", path)
    return safe_text(error, 2_000)


def _names(error: OSError, path: str | None) -> bool:
    """Whether the error is about the store's file (or its -wal, -shm)."""
    return bool(path) and os.path.abspath(str(error.filename or "")).startswith(
        os.path.abspath(str(path))
    )


@app.command()
def init() -> None:
    """Create the store's tables (safe to run again, and from many processes at once)."""
    where = _guarded(init_store)
    console.print(Text(f"Ready: {where}"))


@app.command()
def demo() -> None:
    """A small festival on the sandbox world, end to end: given back, left alone, and what needs
    a person."""
    logging.basicConfig(level=logging.ERROR)
    settings = _guarded(Settings.from_env)
    budget = {"RUNLEDGER_SANDBOX_BUDGET_MS": "500"} | settings.module_settings
    settings = settings.model_copy(update={"module_settings": budget})
    if not os.environ.get("EVENT_RETRY_DELAYS_S"):
        # The story's retries, half a second apart rather than 5, 30 and 120 s.
        settings = settings.model_copy(update={"retry_delays_s": (0.5,), "retry_jitter": 0.0})
    where = _guarded(lambda: init_store(settings))
    with _guarded(lambda: bootstrap(settings)) as rl:
        console.print(
            Text.assemble(
                ("runledger demo", "bold"), f" on the {safe_text(where)}, with the sandbox world\n"
            )
        )
        run_demo(rl, console)


@app.command()
def runs(
    limit: Annotated[int, typer.Option(help=f"how many runs, at most {MAX_RUNS:,}")] = 20,
) -> None:
    """List recent runs with their cleanup status."""
    _guarded(lambda: within("--limit", limit, MAX_RUNS))
    with _open() as rl:
        rl.projector.catch_up()
        ids = _recent_runs(rl, limit)
        if not ids:
            console.print("No runs yet.")
            return
        show_runs(console, rl, ids, with_log=False)


@app.command()
def log(
    run_id: UUID,
    limit: Annotated[int, typer.Option(help="show the last N lines")] = LOG_LINES,
    since: Annotated[str | None, typer.Option(help="only lines from this ISO time on")] = None,
) -> None:
    """Show one run's log: its last lines, and what is left to give back."""
    _guarded(lambda: within("--limit", limit, MAX_LOG_LINES))
    start = _guarded(lambda: moment("--since", since))
    with _open() as rl:
        rl.projector.catch_up()
        _guarded(lambda: _known_run(rl, run_id))
        show_runs(console, rl, [run_id], with_log=True, limit=limit, since=start)


def _known_run(rl: Runledger, run_id: UUID) -> None:
    if rl.queries.run(run_id, rl.clock(), rl.settings.max_revert_attempts) is None:
        raise NotFound(f"no run {run_id}")


def _open() -> Runledger:
    return _guarded(bootstrap)


@app.command()
def modules() -> None:
    """List every module with its site, status, reason, actions and leases."""
    with _open() as rl:
        table = Table("module", "site", "status", "actions", "leases", "reason", title="Modules")
        for m in rl.modules:
            style = "green" if m.status == "loaded" else "red"
            table.add_row(
                safe_text(m.name or f"({Path(m.folder).name})"),
                safe_text(m.site or ""),
                Text(safe_text(m.status), style=style),
                _listed(m.actions),
                _listed(m.leases),
                safe_text(m.reason or ""),
            )
        console.print(table)


def _listed(values: list[str]) -> str:
    return safe_text(", ".join(safe_text(v) for v in values))


@app.command()
def start(
    spec: Annotated[typer.FileText, typer.Argument(help="a JSON spec file, or - for stdin")],
) -> None:
    """Start a run from a spec."""
    with _open() as rl:
        run_id = _guarded(lambda: rl.runs.start(spec.read()))
        console.print(str(run_id))


@app.command()
def tick(worker: Annotated[str, typer.Option(help="this runner's name")] = "") -> None:
    """Run one tick as a runner: join, the advance leg, the cleanup leg, leave."""
    with _open() as rl:
        runner = _guarded(lambda: rl.runner(worker or _default_worker()))
        report = _guarded(runner.once)
        console.print(f"advance: {safe_text(report.advance)}")
        for run_id, summary in report.swept.items():
            console.print(f"cleanup {run_id}: {safe_text(summary)}")


@app.command()
def runner(
    interval: Annotated[float, typer.Option(help="seconds between ticks")] = 1.0,
    worker: Annotated[str, typer.Option(help="this runner's name")] = "",
) -> None:
    """Tick until stopped. SIGTERM or Ctrl-C finishes the call in flight and claims nothing new."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with _open() as rl:
        name = worker or _default_worker()
        console.print(f"runner {safe_text(name)} ticking every {interval:g}s")
        ticks = _guarded(lambda: rl.runner(name)).run(interval, stop)
        console.print(f"runner {safe_text(name)} stopped after {ticks} ticks")


@app.command()
def advance(run_id: UUID, by: Annotated[str, typer.Option(help="who asks")]) -> None:
    """Advance a run's current phase once its steps are done."""
    with _open() as rl:
        console.print(safe_text(_guarded(lambda: rl.runs.advance(run_id, by))))


@app.command()
def cancel(
    run_id: UUID,
    by: Annotated[str, typer.Option(help="who asks")],
    cleanup: Annotated[bool, typer.Option(help="give everything back (default)")] = True,
) -> None:
    """Cancel a run, with cleanup or keeping everything in the world in your name."""
    with _open() as rl:
        kept = _guarded(lambda: rl.ledger.cancel_run(run_id, by, cleanup=cleanup))
        console.print(
            "cancelled" + ("" if cleanup else f"; {kept} entries kept by {safe_text(by)}")
        )


@app.command()
def abort(run_id: UUID, reason: Annotated[str, typer.Option(help="why")]) -> None:
    """Abort a run; the cleanup leg gives everything back."""
    with _open() as rl:
        _guarded(lambda: rl.ledger.abort_run(run_id, reason))
        console.print("aborted")


@app.command()
def cleanup(run_id: UUID, by: Annotated[str, typer.Option(help="who asks")]) -> None:
    """Ask again: reset the run's attempt counters and work it now."""
    with _open() as rl:
        summary = _guarded(lambda: rl.cleanup.manual_cleanup(run_id, by))
        console.print(safe_text(summary))


def _default_worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _recent_runs(rl: Runledger, limit: int) -> list[UUID]:
    with rl.backend.transaction(commit=False) as cursor:
        cursor.execute(
            rl.backend.sql(
                "SELECT run_id FROM {rl_runs} ORDER BY started_at DESC, run_id DESC LIMIT %s"
            ),
            [limit],
        )
        return [UUID(row["run_id"]) for row in cursor.fetchall()][::-1]


operator_cli.register(app, console, _open, _guarded)
fleet_cli.register(app, console, _open, _guarded)
sandbox_cli.register(app, console, _guarded)
tokens_cli.register(app, console, _open, _guarded)
serve_cli.register(app, console, _open, _guarded, _default_worker)


def main() -> None:
    """The CLI, with every command's store trouble reported in the one place, _fail."""
    code: int | str | None = 0
    try:
        app(sys.argv[1:])
    except OPERATOR_ERRORS as error:
        try:
            _fail(error)
        except typer.Exit as done:
            code = done.exit_code
    except SystemExit as done:
        code = done.code
    except KeyboardInterrupt:
        code = 130
    _leave(code)


def _leave(code: int | str | None) -> NoReturn:
    """Exit now, even when a module left a non-daemon thread that would hold the interpreter
    open for ever: name the module, then leave without waiting for it."""
    stuck = left_behind(SHUTDOWN_GRACE_S)
    if not stuck:
        sys.exit(code)
    for module, threads in sorted(stuck.items(), key=lambda found: found[0] or ""):
        who = f"module {safe_text(module)}" if module else "an unidentified owner"
        print(
            f"runledger: {who} left {len(threads)} thread(s) running "
            f"({safe_text(', '.join(threads))}); exiting without them",
            file=sys.stderr,
        )
    if isinstance(code, str):
        print(code, file=sys.stderr)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


if __name__ == "__main__":
    main()

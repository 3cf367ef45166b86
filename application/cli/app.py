"""The `runledger` command: every command group's commands, in the order `--help` lists them,
what `--help` says of exit codes and the environment, and the one exit every command leaves by."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import typer
import typer.main
from pydantic import ValidationError

from runledger import __version__
from runledger.application.cli import (
    acting,
    cleanup,
    contexts,
    decisions,
    definitions,
    demo,
    environment,
    exits,
    fleet,
    modules,
    occurrences,
    projections,
    replay,
    runner,
    runs,
    sandbox,
    serve,
    step,
    store,
    tokens,
    webhooks,
)
from runledger.application.cli.console import console
from runledger.application.cli.errors import OPERATOR_ERRORS, Usage, answering_json, fail
from runledger.application.display import safe_text
from runledger.application.errors import BadRequest, RunledgerError
from runledger.application.modules.threads import left_behind
from runledger.domain.values import plain_message

SHUTDOWN_GRACE_S = 2.0
"""How long, after a command, threads a module left behind are waited for before exiting."""

app = typer.Typer(
    help="runledger: what a game-event run changed, and giving all of it back. Every command "
    "but demo, runner and serve takes --json and prints what the HTTP API answers.",
    epilog=f"{exits.every_code()}\n\n{environment.epilog()}",
    no_args_is_help=True,
    add_completion=True,
)
COMMANDS = (
    store.init,
    contexts.login,
    demo.demo,
    runs.runs,
    runs.log,
    modules.modules,
    modules.reconcile,
    acting.start,
    runner.tick,
    runner.runner,
    acting.advance,
    acting.cancel,
    acting.abort,
    cleanup.cleanup,
    decisions.keep,
    decisions.retry,
    replay.replay,
    projections.projections,
    projections.rebuild,
    step.step,
    fleet.runners,
    serve.serve,
)
MAY_BE_INCOMPLETE = (runs.log, cleanup.cleanup, decisions.keep, decisions.retry)
"""The commands that exit 3 when a run's cleanup is left incomplete."""


def _summary(command: Callable[..., Any] | None) -> str | None:
    """The docstring's first paragraph on one line: Typer lists a command with the line breaks
    of its docstring kept, which cuts a sentence wherever the source wrapped it."""
    said = inspect.getdoc(command) if command is not None else None
    return " ".join(said.split("\n\n")[0].split()) if said else None


for command in COMMANDS:
    incomplete = command in MAY_BE_INCOMPLETE
    app.command(epilog=exits.epilog(incomplete=incomplete), short_help=_summary(command))(command)
OCCURRENCES: tuple[tuple[str, Callable[..., None]], ...] = (
    ("schedule", occurrences.schedule),
    ("occurrences", occurrences.occurrences),
    ("cancel", occurrences.cancel),
)
"""`def`'s commands about occurrences, after those about definitions."""
for verb, occurring in OCCURRENCES:
    definitions.app.command(verb)(occurring)
for group in (sandbox.app, tokens.app, webhooks.app, definitions.app, contexts.app):
    for info in group.registered_commands:
        info.epilog = exits.epilog()
        info.short_help = info.short_help or _summary(info.callback)
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(tokens.app, name="token")
app.add_typer(webhooks.app, name="webhook")
app.add_typer(definitions.app, name="def")
app.add_typer(contexts.app, name="context")


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
    answering_json(False)  # until this command's own --json says otherwise


def main() -> None:
    """The CLI, with every command's store trouble reported in the one place, errors.fail."""
    _leave(run(sys.argv[1:]))


@functools.cache
def click_command() -> Callable[..., Any]:
    """The click command Typer builds from ``app``, built once a process: Typer's own
    ``app(...)`` builds it again at every call (~40 ms of reading every command's signature),
    which a test running commands in-process, or forking them from one process, paid each
    time. An error no command expected is told by Python's own traceback hook, not Typer's
    (whose Rich traceback shows every frame's locals: a token's secret among them)."""
    return typer.main.get_command(app)


def run(argv: list[str]) -> int | str | None:
    """One command, to its exit code (exits.py); what main runs, and tests in-process."""
    try:
        # Not standalone: Typer's own refusals come here, to be said as every other one is.
        code = click_command()(argv, prog_name="runledger", standalone_mode=False)
    except typer.TyperException as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # as Typer tells it: the help is shown
            return exits.USAGE
        return _failed(_parse_error(error))
    except typer.Abort:
        print("runledger: aborted", file=sys.stderr)
        return exits.FAILED
    except OPERATOR_ERRORS as error:
        return _failed(error)
    except SystemExit as done:
        return done.code
    except KeyboardInterrupt:
        return exits.INTERRUPTED
    return code if isinstance(code, int) else exits.OK


def _parse_error(error: typer.TyperException) -> RunledgerError:
    """Typer's refusal of the command line in one sentence, with where to read more: a usage
    error (exit 2, its own code for one) whatever option or argument it is about."""
    ctx = getattr(error, "ctx", None)
    said = _plain(error) or " ".join(safe_text(error.format_message()).split()).rstrip(".")
    more = f" ({ctx.command_path} --help says what it takes)" if ctx is not None else ""
    return (Usage if error.exit_code == exits.USAGE else BadRequest)(f"{said}{more}")


def _plain(error: typer.TyperException) -> str | None:
    """A value Typer's pydantic coercion refused, named as our own checks name one (values.py's
    words, not pydantic's), or None for any other refusal."""
    param, cause = getattr(error, "param", None), error.__cause__
    if param is None or not isinstance(cause, ValidationError) or not cause.errors():
        return None
    named = str(param.name).upper() if param.param_type_name == "argument" else param.opts[0]
    return f"{named}: {safe_text(plain_message(cause.errors()[0])).rstrip('.')}"


def _failed(error: BaseException) -> int | str | None:
    try:
        fail(error)
    except typer.Exit as done:
        return done.exit_code


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

"""How the CLI says an error an operator can act on: one sentence and its exit code (exits.py),
never a traceback."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

import typer
from rich.text import Text

from runledger.application.cli import exits
from runledger.application.cli.console import console
from runledger.application.display import safe_text
from runledger.application.errors import STORE_ERRORS, BadRequest, RunledgerError, store_error
from runledger.application.settings import Settings
from runledger.application.store.url import store_config
from runledger.domain.errors import DomainError

T = TypeVar("T")

OPERATOR_ERRORS: tuple[type[BaseException], ...] = (RunledgerError, DomainError, *STORE_ERRORS)
"""Every error an operator can act on: one sentence and exit code 1 (2 for Usage), never a
traceback."""


class Usage(BadRequest):
    """A value the command line may not carry (a bound, a time, a filter): exit code 2, as
    Typer's own parse errors, but said in one sentence on stdout like every other refusal."""


_IN_JSON = [False]


def answering_json(on: bool) -> bool:
    """Set by --json, and back to False at the start of every command: with it, a refusal is
    said on stdout as the HTTP API says one, ``{"detail": "..."}``, so what a script reads from
    stdout is always JSON. (A Typer option callback, hence the bool answered.)"""
    _IN_JSON[0] = on
    return on


def guarded(action: Callable[[], T]) -> T:
    """What ``action`` answers, or its operator error said by ``fail``."""
    try:
        return action()
    except OPERATOR_ERRORS as error:
        fail(error)


def fail(error: BaseException) -> NoReturn:
    said = _sentence(error)
    if _IN_JSON[0]:
        sys.stdout.write(json.dumps({"detail": said}) + "\n")
        sys.stdout.flush()
    else:
        console.print(Text.assemble(("runledger: ", "red"), said), soft_wrap=True)
    raise typer.Exit(exits.USAGE if isinstance(error, Usage) else exits.FAILED)


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

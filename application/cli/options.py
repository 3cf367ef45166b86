"""Options read as more than their type says: a count between bounds, a time; and the --json
every command takes. A value refused here is a usage error (exit code 2)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Annotated, Any

import typer

from runledger.application.cli.doors.contexts import SERVER_ENV, server
from runledger.application.cli.errors import Usage, answering_json
from runledger.application.display import safe_repr, safe_text
from runledger.application.errors import BadRequest
from runledger.application.services.definitions import definition_name
from runledger.application.services.inputs import MAX_NAME
from runledger.domain.token import ROLES, as_role
from runledger.domain.values import UnsafeValue, check_text, text_problem, undecodable

AsJson = Annotated[
    bool,
    typer.Option(
        "--json",
        help="print the HTTP API's answer for this as JSON, nothing else (a refusal too)",
        callback=answering_json,
        is_eager=True,  # before the checks below, so that their refusal is JSON too
    ),
]


def by_option(said: str) -> Any:
    """The --by option, saying what the person does: optional on the command line, since a
    server names the person itself; the store opened directly needs it (doors/local_runs.py)."""
    return typer.Option("--by", help=f"{said} (on the store directly)", callback=by_checked)


def _checked(check: Callable[[str, str], str]) -> Callable[[typer.CallbackParam, Any], Any]:
    """An option's callback: its value as ``check`` takes it (given the option's name), or
    Usage naming the option, so that a value the command line may not carry exits 2 whichever
    option carries it, before anything is opened."""

    def callback(param: typer.CallbackParam, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        argument = param.param_type_name == "argument"
        option = str(param.name).upper() if argument else param.opts[0]
        try:
            return check(option, value)
        except (BadRequest, UnsafeValue) as error:
            raise Usage(safe_text(error)) from None

    return callback


def _person(option: str, value: str) -> str:
    if not value.strip():
        raise Usage(f"{option}: must name the person who asks; it is empty")
    return check_text(value, option, limit=MAX_NAME)


def _by(option: str, value: str) -> str:
    person = _person(option, value)
    if server() is not None:
        raise Usage(
            f"{option} is refused through a server: the token names who acts "
            f"({SERVER_ENV} or the current context is set)"
        )
    return person


def _worker(option: str, value: str) -> str:
    return value and check_text(value, option, limit=MAX_NAME, empty=False)


def _reason(option: str, value: str) -> str:
    return check_text(value, option, empty=False)


def _text(option: str, value: str) -> str:
    return check_text(value, option, empty=False)


def _definition(option: str, value: str) -> str:
    return definition_name(value)


def _role(option: str, value: str) -> str:
    if as_role(value) is None:
        raise Usage(f"{option} {safe_repr(value)} is not one of {', '.join(ROLES)}")
    return value


person_checked = _checked(_person)
"""--by, a token's NAME: a person's name, not empty, at most 200 characters."""
by_checked = _checked(_by)
"""--by: who acts, on the store directly; refused through a server, whose token names them."""
worker_checked = _checked(_worker)
"""--worker: a runner's name (empty for the default)."""
reason_checked = _checked(_reason)
"""--reason: why, not empty."""
text_checked = _checked(_text)
"""A name or ref to look up: text a store can hold, not empty (else it could name nothing)."""
definition_checked = _checked(_definition)
"""A definition's NAME as a path and a step id can take it."""
role_checked = _checked(_role)
"""--role: one of the token roles."""


def moment(option: str, text: str | None) -> datetime | None:
    """An option's ISO 8601 time (UTC unless it says otherwise), or Usage naming it."""
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise Usage(f"{option} {safe_repr(text)} is not an ISO 8601 time") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def within(option: str, value: int, most: int) -> int:
    """A count option between 1 and ``most``, or Usage naming it."""
    if not 1 <= value <= most:
        raise Usage(f"{option} must be between 1 and {most:,}; {value} was asked for")
    return value


MAX_INTERVAL_S = 3_600.0


def interval_s(option: str, seconds: float) -> float:
    """Seconds between ticks: finite, more than 0 (0 or less would tick without rest, hammering
    the store) and at most an hour; or Usage naming the option."""
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_INTERVAL_S):
        raise Usage(
            f"{option} must be more than 0 and at most {MAX_INTERVAL_S:g} seconds; "
            f"{seconds:g} was asked for"
        )
    return seconds


def file_text(file: IO[str]) -> str:
    """What a file argument holds, or a refusal naming the file when it is not UTF-8 text
    (its content is refused, exit code 1, as a spec that is not JSON is)."""
    try:
        return file.read()
    except UnicodeDecodeError as error:
        given = str(getattr(file, "name", "-"))  # a stream with no name is stdin's
        name = "stdin" if given in ("-", "<stdin>") else safe_text(given)
        raise BadRequest(f"{name}: {undecodable(error)}") from None


def typed(option: str, text: str | None) -> str | None:
    """Text a store can hold and compare (no NUL, no lone surrogates), or Usage naming it."""
    problem = None if text is None else text_problem(text)
    if problem is not None:
        raise Usage(f"{option}: {problem}")
    return text

"""--idempotency-key on the commands that act: the same request again under the same key, from
the same person, answers the first answer and changes nothing, through the very keys the HTTP
API keeps (services/once.py); another request under the key is refused. The key is the person's
at this terminal: the --by the command takes, else the shell user."""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from contextlib import nullcontext
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel

from runledger.application.cli.errors import Usage, guarded
from runledger.application.errors import Conflict
from runledger.application.services.once import Answer, KeyedCall
from runledger.application.services.once import Once as Keys
from runledger.domain.keyed import key_problem

M = TypeVar("M", bound=BaseModel)


def key_checked(key: str | None) -> str | None:
    problem = None if key is None else key_problem(key)
    if problem is not None:
        raise Usage(f"--idempotency-key {problem}")
    return key


IdempotencyKey = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        metavar="KEY",
        help="run it once: the same command again with this key answers the first answer",
        callback=key_checked,
    ),
]


def terminal_person() -> str:
    """Who acts at this terminal when a command takes no --by."""
    try:
        return f"{getpass.getuser()} (shell)"
    except (OSError, KeyError):
        return "shell"


def keyed_call(keys: Keys, key: str | None, by: str, path: str, body: Any) -> KeyedCall | None:
    """The request under ``key`` as the API would be sent it (POST ``path`` with ``body``)."""
    return None if key is None else keys.call(by, key, "POST", path, body)


def once(
    keys: Keys,
    asked: tuple[str | None, str, str, Any],
    act: Callable[[], M],
    model: type[M],
    status: int = 200,
    withheld: Callable[[M], str] | None = None,
) -> M:
    """``act()`` as the API's POST would do it under the key: ``asked`` is (key, person, path,
    body). Errors leave the command as one sentence (cli/errors.py)."""
    key, by, path, body = asked
    call = guarded(lambda: keyed_call(keys, key, by, path, body))
    return guarded(lambda: answered(call, act, model, status, withheld))


def spec_body(text: str) -> Any:
    """A spec file's JSON, as the API's start is sent it (text that is not JSON is refused by
    the start itself, which keeps no key)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def answered(
    call: KeyedCall | None,
    act: Callable[[], M],
    model: type[M],
    status: int = 200,
    withheld: Callable[[M], str] | None = None,
) -> M:
    """``act()``, once per key: a repeat answers the first answer, read back as ``model``.
    ``withheld`` says why an answer may not be given again (a secret is shown once)."""
    if call is None:
        return act()

    def acted() -> Answer:
        done = act()
        why = None if withheld is None else withheld(done)
        return Answer(status, done.model_dump_json(by_alias=True), why)

    kept = call.answer(nullcontext(), acted, lambda _: None)
    if kept.status >= 400:
        raise Conflict(_detail(kept.body))
    return model.model_validate_json(kept.body)


def _detail(body: str) -> str:
    """The sentence of a refusal the API kept (``{"detail": ...}``, one or a list)."""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        return body
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        return str(detail[0].get("msg", detail[0]))
    return str(detail)

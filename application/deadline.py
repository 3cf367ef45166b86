from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from application.plain import Unreadable, describe_error, plain


@dataclass(frozen=True)
class Returned:
    value: Any


@dataclass(frozen=True)
class Raised:
    error: BaseException
    message: str
    """``TypeName: message``, read in the module's thread: reading it may be what raises."""


@dataclass(frozen=True)
class TimedOut:
    seconds: float


@dataclass(frozen=True)
class Malformed:
    reason: str


Outcome = Returned | Raised | TimedOut | Malformed


def call_with_deadline(
    fn: Callable[..., Any], kwargs: dict[str, Any], seconds: float, *, raw: bool = False
) -> Outcome:
    """Call a module's function, sync or async, and never wait longer than ``seconds``.

    The call runs in a daemon thread of its own: a module that blocks, sleeps or loops for ever
    is abandoned at the deadline instead of holding the caller, and cannot keep the process from
    exiting. Nothing it raises reaches the caller as an exception. Its answer is copied into plain
    data in that thread (unless ``raw``: the loader's import answers a function), so whatever it
    returned, judging it cannot raise.
    """
    box: list[Outcome] = []
    finished = threading.Event()

    def target() -> None:
        try:
            value = fn(**kwargs)
            if inspect.isawaitable(value):
                value = asyncio.run(_wait(value))
            box.append(Returned(value if raw else plain(value)))
        except Unreadable as error:
            box.append(Malformed(str(error)))
        except BaseException as error:  # a module's failure is an answer, never our crash
            box.append(Raised(error, describe_error(error)))
        finally:
            finished.set()

    threading.Thread(target=target, name=f"module-call-{fn!r:.40}", daemon=True).start()
    if not finished.wait(seconds):
        return TimedOut(seconds)
    return box[0]


async def _wait(awaitable: Any) -> Any:
    return await awaitable

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Returned:
    value: Any


@dataclass(frozen=True)
class Raised:
    error: BaseException


@dataclass(frozen=True)
class TimedOut:
    seconds: float


Outcome = Returned | Raised | TimedOut


def call_with_deadline(fn: Callable[..., Any], kwargs: dict[str, Any], seconds: float) -> Outcome:
    """Call a module's function, sync or async, and never wait longer than ``seconds``.

    The call runs in a daemon thread of its own: a module that blocks, sleeps or loops for ever
    is abandoned at the deadline instead of holding the caller, and cannot keep the process from
    exiting. Nothing it raises reaches the caller as an exception.
    """
    box: list[Outcome] = []
    finished = threading.Event()

    def target() -> None:
        try:
            value = fn(**kwargs)
            if inspect.isawaitable(value):
                value = asyncio.run(_wait(value))
            box.append(Returned(value))
        except BaseException as error:  # a module's failure is an answer, never our crash
            box.append(Raised(error))
        finally:
            finished.set()

    threading.Thread(target=target, name=f"module-call-{fn!r:.40}", daemon=True).start()
    if not finished.wait(seconds):
        return TimedOut(seconds)
    return box[0]


async def _wait(awaitable: Any) -> Any:
    return await awaitable

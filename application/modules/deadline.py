from __future__ import annotations

import asyncio
import ctypes
import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runledger.application.modules.plain import Unreadable, describe_error, plain
from runledger.application.modules.workers import WORKERS


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
    stopped: bool = False
    """Whether the call was stopped at the deadline (see ``call_with_deadline``'s ``stop``)."""


@dataclass(frozen=True)
class Malformed:
    reason: str


Outcome = Returned | Raised | TimedOut | Malformed

CallObserver = Callable[[str, str, float], None]
"""Told of each module call a service makes: the action (or lease), its outcome, its seconds."""


def unobserved(action: str, outcome: str, seconds: float) -> None:
    """Nobody is counting."""


STOP_GRACE_S = 0.5


class ModuleStopped(BaseException):
    """Raised inside a module's call that overran its deadline, to end it. A BaseException, so
    the module's own ``except Exception`` does not swallow it."""


def call_with_deadline(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    seconds: float,
    *,
    raw: bool = False,
    stop: bool = False,
    name: str | None = None,
) -> Outcome:
    """Call a module's function, sync or async, and never wait longer than ``seconds``.

    The call runs in a daemon thread, not the caller's: a module that blocks, sleeps or loops for
    ever is abandoned at the deadline instead of holding the caller, and cannot keep the process
    from exiting. A waiting thread of the process's pool takes it (workers.py); a call to be
    stopped, or one the loader names, has a thread of its own. Nothing it raises reaches the
    caller as an exception. Its answer is copied into plain data in that thread (unless ``raw``:
    the loader's import answers a function), so whatever it returned, judging it cannot raise.

    With ``stop``, a call still running at the deadline is also ended: ``ModuleStopped`` is
    raised in its thread, which ends Python code that loops for ever but not a wait inside C
    (a sleep, a socket): that one ends when the wait does. The loader stops an import or a
    register this way; a step's call is only abandoned, since it may be half way through
    changing the world and its late answer is judged by the cleanup leg.
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

    if not stop and name is None:
        WORKERS.run(target)
        if not finished.wait(seconds):
            return TimedOut(seconds)
        return box[0]
    thread = threading.Thread(target=target, name=name or f"module-call-{fn!r:.40}", daemon=True)
    thread.start()
    if not finished.wait(seconds):
        return TimedOut(seconds, stop and _stop(thread, finished))
    return box[0]


def _stop(thread: threading.Thread, finished: threading.Event) -> bool:
    """Raise ModuleStopped in the thread until it ends or the grace is over; answers whether
    it ended. Raised again and again: a module may catch the first one."""
    grace = time.monotonic() + STOP_GRACE_S
    while thread.is_alive() and time.monotonic() < grace:
        if not finished.is_set():  # once it is answering, it is ending on its own
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(thread.ident or 0), ctypes.py_object(ModuleStopped)
            )
        thread.join(0.05)
    return not thread.is_alive()


async def _wait(awaitable: Any) -> Any:
    return await awaitable

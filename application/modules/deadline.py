from __future__ import annotations

import asyncio
import ctypes
import inspect
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runledger.application.modules.plain import Unreadable, describe_error, plain
from runledger.application.modules.workers import WORKERS

log = logging.getLogger("runledger.calls")


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
    late: Late | None = None,
    what: str | None = None,
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
    register this way. A step's call is only abandoned, since it may be half way through
    changing the world: it is counted among the abandoned calls (``ABANDONED``) until it ends,
    and ``late``, if given, is told its answer then, in the call's thread. ``what`` names the
    call to a person (which call a stopping runner left).
    """
    call = _Call(what or name or str(getattr(fn, "__qualname__", "a module call")), late)

    def target() -> None:
        try:
            value = fn(**kwargs)
            if inspect.isawaitable(value):
                value = asyncio.run(_wait(value))
            outcome: Outcome = Returned(value if raw else plain(value))
        except Unreadable as error:
            outcome = Malformed(str(error))
        except BaseException as error:  # a module's failure is an answer, never our crash
            outcome = Raised(error, describe_error(error))
        call.answer(outcome)

    if not stop and name is None:
        WORKERS.run(target)
        if not call.finished.wait(seconds) and call.give_up():
            return TimedOut(seconds)
        return call.outcome or TimedOut(seconds)
    thread = threading.Thread(target=target, name=name or f"module-call-{fn!r:.40}", daemon=True)
    thread.start()
    if not call.finished.wait(seconds) and call.give_up():
        return TimedOut(seconds, stop and _stop(thread, call.finished))
    return call.outcome or TimedOut(seconds)


Late = Callable[[Outcome], None]
"""Told the answer of a call that was abandoned at its deadline, when it comes."""


class _Call:
    """One call's answer, and whether its caller stopped waiting for it first. The two are
    decided under one lock, so an answer is either the caller's or the late handler's."""

    def __init__(self, what: str, late: Late | None) -> None:
        self.what = what
        self.late = late
        self.outcome: Outcome | None = None
        self.finished = threading.Event()
        self._lock = threading.Lock()
        self._abandoned: int | None = None

    def give_up(self) -> bool:
        """The caller's deadline passed: abandon the call, unless its answer just came."""
        with self._lock:
            if self.outcome is not None:
                return False
            self._abandoned = ABANDONED.add(self.what)
            return True

    def answer(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcome = outcome
            abandoned = self._abandoned
        self.finished.set()
        if abandoned is None:
            return
        try:
            if self.late is not None:
                self.late(outcome)
        except Exception:  # the late answer's trouble is logged; the thread goes back to the pool
            log.exception("judging the late answer of %s failed", self.what)
        finally:
            ABANDONED.done(abandoned)


class Abandoned:
    """The calls of this process abandoned at their deadline and still running: a runner that
    stops waits a bounded grace for them (their answers are still recorded), then says which
    it left."""

    def __init__(self) -> None:
        self._calls: dict[int, tuple[str, float]] = {}
        self._numbers = itertools.count(1)
        self._changed = threading.Condition()

    def add(self, what: str) -> int:
        with self._changed:
            number = next(self._numbers)
            self._calls[number] = (what, time.monotonic())
            return number

    def done(self, number: int) -> None:
        with self._changed:
            self._calls.pop(number, None)
            self._changed.notify_all()

    def running(self) -> list[str]:
        """Each call still running, with how long ago it was abandoned."""
        now = time.monotonic()
        with self._changed:
            calls = list(self._calls.values())
        return [f"{what} (abandoned {now - since:.1f}s ago)" for what, since in calls]

    def wait(self, grace_s: float) -> list[str]:
        """Wait up to ``grace_s`` for every abandoned call to end; answers those still running."""
        # Counted in real waits, not read off a clock: a test's frozen clock holds it still.
        with self._changed:
            for _ in range(math.ceil(grace_s / 0.05)):
                if not self._calls:
                    break
                self._changed.wait(0.05)
        return self.running()

    def forget(self) -> None:
        """After a fork: the child runs none of the parent's calls."""
        self._calls = {}
        self._changed = threading.Condition()


ABANDONED = Abandoned()
os.register_at_fork(after_in_child=ABANDONED.forget)


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

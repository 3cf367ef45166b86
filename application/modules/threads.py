"""Which module a thread belongs to, and the threads left behind when the process ends.

Threads are the process's, not one runledger's: a module started from any runledger in this
process may leave one, so what is known about them is kept here, once per process.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_started_by: weakref.WeakKeyDictionary[threading.Thread, str] = weakref.WeakKeyDictionary()
_code_of: dict[str, str] = {}
"""Python module name (``__name__`` of a module's code) -> the runledger module it is."""


def note_code(python_name: str, module: str) -> None:
    """Code under ``python_name`` is ``module``'s: a thread running it is that module's."""
    _code_of[python_name] = module


@contextmanager
def watching(module: str) -> Iterator[None]:
    """Threads that appear while core calls ``module`` are taken as that module's."""
    before = set(threading.enumerate())
    try:
        yield
    finally:
        for thread in set(threading.enumerate()) - before:
            _started_by.setdefault(thread, module)


def owner_of(thread: threading.Thread) -> str | None:
    """The module whose code the thread is running (innermost frame first), else the one core
    was calling when it appeared, else None."""
    frame = sys._current_frames().get(thread.ident or -1)
    return _running(frame) or _started_by.get(thread)


def _running(frame: FrameType | None) -> str | None:
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if isinstance(name, str) and name in _code_of:
            return _code_of[name]
        frame = frame.f_back
    return None


def left_behind(grace_s: float) -> dict[str | None, list[str]]:
    """Non-daemon threads still alive after waiting up to ``grace_s`` in all, by owner: each
    would keep the interpreter from exiting."""
    deadline = time.monotonic() + grace_s
    waiting = [
        t
        for t in threading.enumerate()
        if t.is_alive()
        and not t.daemon
        and t is not threading.main_thread()
        and t is not threading.current_thread()
    ]
    found: dict[str | None, list[str]] = {}
    for thread in waiting:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            found.setdefault(owner_of(thread), []).append(thread.name)
    return found

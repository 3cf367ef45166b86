"""Threads reused for module calls.

A call runs in a daemon thread so that its deadline can be kept (deadline.py). Starting a thread
for every call costs the thread's start, and a turn of the scheduler more on a busy machine;
handing the call to a thread already waiting costs one wake-up (scripts/MEASUREMENTS.md,
"Module calls on reused threads"). A thread whose call overran is simply not waited for; when
it ends, it waits for the next call like the others, as long as no more than ``MAX_IDLE`` wait
already.

Threads are the process's, so the pool is one per process; a forked child starts with none.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Callable

MAX_IDLE = 4

Job = Callable[[], None]
"""A call wrapped so that it never raises and says itself when it has finished."""


class Workers:
    def __init__(self, max_idle: int = MAX_IDLE) -> None:
        self.max_idle = max_idle
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def run(self, job: Job) -> None:
        """Start ``job`` on a waiting thread, or on a new one when none waits; never waits."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self, next(self._numbers))
        worker.jobs.put(job)

    def waiting(self) -> int:
        with self._lock:
            return len(self._idle)

    def rest(self, worker: _Worker) -> bool:
        """Whether a thread done with its job waits for another: not when enough already do."""
        with self._lock:
            if len(self._idle) >= self.max_idle:
                return False
            self._idle.append(worker)
            return True

    def forget(self) -> None:
        """After a fork: the child has none of the parent's threads."""
        self._idle = []
        self._lock = threading.Lock()


class _Worker:
    def __init__(self, pool: Workers, number: int) -> None:
        self.pool = pool
        self.jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=f"module-call-{number}", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job()
            except BaseException:  # a job never raises; if one did, this thread is not reused
                return
            if not self.pool.rest(self):
                return


WORKERS = Workers()
os.register_at_fork(after_in_child=WORKERS.forget)

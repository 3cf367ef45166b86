"""The read hook on PostgreSQL: the projector catches up; everyone else waits for it.

A read must see every write saved before it (its own above all). The process holding the
projector's role (role.py) catches the views up itself, as every process did before; any other
asks it to (a NOTIFY on the store's wanted channel) and waits until the views have passed the
store's head as the read began, which covers its own writes, and reads then. A process that
listens (a runner does) is woken by the projector's word that it caught up (a NOTIFY on the
projected channel) and reads the views' positions then; one that does not looks at them every
few milliseconds. The views move when someone reads, as before: a projector that caught up on
every insert would do the same work, only sooner. A waiter whose views do not move tries the
role: with no projector alive, it becomes one, so a process alone never waits on nobody.

The wait is bounded, and a read never answers stale. A projector that is frozen (SIGSTOP, a
suspended VM) keeps its role, as its session lives on; a waiter whose bound passes with the
views still catches them up itself (projecting twice is never wrong, only wasted), answers, and
says so once in the log. Until it sees the views move under someone else again, its reads wait
for the projector only ``GRACE_S``. A projector frozen mid-page holds that page's row locks:
the waiter's catch-up then waits on them until the store's statement timeout
(RUNLEDGER_STORE_TIMEOUT_S) cancels it, and the read fails as the store's trouble (``late``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from runledger.projections.backend import driver_error
from runledger.projections.errors import CannotCatchUp, ProjectionStuck
from runledger.projections.postgres import PostgresBackend
from runledger.projections.projector import Projector
from runledger.projections.role import RETRY_S, Role

log = logging.getLogger("runledger.projector")

ASK_AGAIN_S = 0.5
"""A waiting reader asks again this often: a wake-up sent while the projector's listener was
reconnecting was not heard."""
STEP_S = 0.005
"""Between a waiting read's looks at the views' positions, doubling up to ``MAX_STEP_S``."""
MAX_STEP_S = 0.05
GRACE_S = ASK_AGAIN_S
"""How long a read waits for a projector already found not moving before it catches up itself:
one ask, time for a projector that woke to answer it."""
CANCELLED = frozenset({"57014", "55P03"})
"""A statement cancelled by the statement timeout, or a lock not had within lock_timeout."""
Late = Callable[[int, int], Exception]
"""Made when a wait is over its bound: (the position needed, the position the views reached)."""
Projected = Callable[[], tuple[threading.Event, threading.Event] | None]
"""The projector's word that it caught up, as this process hears it, and whether it listens now
(None while it does not listen: then a waiting read looks at the positions, as before)."""


class Following:
    """``fresh`` for a PostgreSQL store shared by processes: catch up if this process is the
    projector, else wait for it; the projecting thread starts with the first read."""

    def __init__(
        self,
        projector: Projector,
        role: Role,
        catch_up: Callable[[], int],
        *,
        wait_s: float,
        late: Late,
        wanted: Callable[[], threading.Event | None],
        projected: Projected = lambda: None,
    ) -> None:
        self.projector = projector
        self.role = role
        self.catch_up = catch_up
        self.wait_s = wait_s
        self.late = late
        self.wanted = wanted
        self.projected = projected
        self._ear: tuple[threading.Event, threading.Event] | None = None
        self.projecting: Projecting | None = None
        self.still = False
        """Whether the last wait that passed its bound found the projector not moving, and no
        wait since has seen the views move: the warning is said once, not once per read."""
        self._role_asked = -math.inf
        self._starting = threading.Lock()
        self._saying = threading.Lock()

    def fresh(self) -> int:
        self._start()
        if self.role.held or self._try_role():
            return self.catch_up()
        head, reached = self._level()
        return reached if reached >= head else self._wait(head)

    def _try_role(self) -> bool:
        """The role, asked for at most once a RETRY_S by reads: a process that is not the
        projector asked the server at every read. Its first read asks (a process alone
        projects from its first read on); its projecting thread asks every RETRY_S, and a read
        that has to wait asks at once (``_wait``)."""
        now = time.monotonic()
        if now - self._role_asked < RETRY_S:
            return False
        self._role_asked = now
        return self.role.take()

    def close(self) -> None:
        if self.projecting is not None:
            self.projecting.stop()
        self.role.release()

    def _wait(self, target: int) -> int:
        # Counted in steps slept rather than by the clock: a test's frozen clock holds
        # time.monotonic still, while time.sleep always sleeps in real time.
        bound = min(self.wait_s, GRACE_S) if self.still else self.wait_s
        waited, step, tried, asked = 0.0, STEP_S, -RETRY_S, -ASK_AGAIN_S
        while True:
            reached = self.projector.reached()
            if reached >= target:
                self.still = False
                return reached
            if waited >= bound:
                return self._instead(target, reached)
            if waited - tried >= RETRY_S:
                tried = waited
                if self.role.take():
                    return self.catch_up()
            if waited - asked >= ASK_AGAIN_S:
                asked = waited
                self.role.want()
            ear = self._heard()
            if ear is None:
                time.sleep(step)
                waited += step
                step = min(step * 2, MAX_STEP_S)
                continue
            # Woken by the projector's word that it caught up, or at the next ask: the
            # positions are read once a catch-up, not every few milliseconds.
            heard = ear.wait(ASK_AGAIN_S)
            ear.clear()
            waited += STEP_S if heard else ASK_AGAIN_S

    def _heard(self) -> threading.Event | None:
        """The projector's word, once this process listens (asked for until it does)."""
        if self._ear is None:
            self._ear = self.projected()
        if self._ear is None or not self._ear[1].is_set():
            return None
        return self._ear[0]

    def _instead(self, target: int, reached: int) -> int:
        """The projector holds the role and does not move (frozen, hung): catch up here."""
        try:
            caught = self.catch_up()
        except Exception as error:
            # Frozen mid-page, it holds the tracking rows this page must lock: the store's
            # statement timeout ends the wait on them, and the read fails as it did before.
            found = driver_error(error)
            if getattr(found, "sqlstate", None) in CANCELLED:
                raise self.late(target, reached) from error
            raise
        with self._saying:
            if not self.still:
                self.still = True
                log.warning(
                    "the views did not move within %g s although another process holds the "
                    "projector's role: it is frozen or hung; this process catches them up "
                    "itself until it moves again",
                    self.wait_s,
                )
        return caught

    def _level(self) -> tuple[int, int]:
        """The store's head and where every view is, in one round trip: level, read at once."""
        backend = self.projector.backend
        if not isinstance(backend, PostgresBackend):
            return self.projector.head(), self.projector.reached()
        names = [v.name for v in self.projector.views]
        markers = backend.markers(len(names))
        tracking = backend.qualify("rl_tracking")
        [row] = backend.select(
            f'SELECT (SELECT MAX(notification_id) FROM "{backend.schema}".{backend.events_table})'
            f" AS head, (SELECT COUNT(*) FROM {tracking} WHERE name IN ({markers})) AS tracked,"
            f" (SELECT MIN(position) FROM {tracking} WHERE name IN ({markers})) AS reached",
            [*names, *names],
        )
        reached = int(row["reached"] or 0) if row["tracked"] == len(names) else 0
        return int(row["head"] or 0), reached

    def _start(self) -> None:
        if self.projecting is not None:
            return
        with self._starting:
            if self.projecting is None:
                self.projecting = Projecting(self.role, self.catch_up, self.wanted)
                self.projecting.start()


class Projecting:
    """The projector's thread: while this process holds the role it catches the views up when
    a reader elsewhere asks (``wanted``), and once as it takes the role; until then it tries the
    role every ``RETRY_S``, so that one process takes over within seconds of the last one's
    death."""

    def __init__(
        self,
        role: Role,
        catch_up: Callable[[], int],
        listen: Callable[[], threading.Event | None],
    ) -> None:
        self.role = role
        self.catch_up = catch_up
        self.listen = listen
        """Called once this process holds the role: only the projector LISTENs for readers'
        asks, so a process that never projects holds no connection for it."""
        self.wanted: threading.Event | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="runledger-projector", daemon=True)
        self._said: str | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self.wanted is not None:
            self.wanted.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(10)

    def _run(self) -> None:
        held = False
        while not self._stop.is_set():
            if not (self.role.take() and self.role.still_held()):
                held = False
                self._stop.wait(RETRY_S)
                continue
            if not held:
                held = True
                if self.wanted is None:
                    self.wanted = self.listen()
                self._project()
            elif self._asked():
                self._project()

    def _asked(self) -> bool:
        if self.wanted is None:
            self._stop.wait(RETRY_S)
            return False
        asked = self.wanted.wait(RETRY_S)
        self.wanted.clear()
        return asked and not self._stop.is_set()

    def _project(self) -> None:
        try:
            self.catch_up()
            self.role.say_projected()  # the readers that asked wait for this word
            self._said = None
        except CannotCatchUp:
            # A process that cannot write the store must not keep the role from one that can.
            self.role.release()
            self._stop.wait(RETRY_S)
        except ProjectionStuck as error:
            # Every read meets it and says so (a 503, the runner's log, /readyz): not here too.
            log.debug("the projector waits at a stuck view: %s", error)
            self._stop.wait(RETRY_S)
        except Exception as error:
            # The store in trouble, a driver's error: a thread has no caller to tell, so it
            # says so in the log once and tries again.
            self._say(error)
            self._stop.wait(RETRY_S)

    def _say(self, error: Exception) -> None:
        said = str(error)[:500]
        if said != self._said:  # once per trouble, not once a second
            log.warning("the projector cannot catch up: %s", said)
            self._said = said

"""Idempotent writes (SPEC "Idempotent writes"): a request made under a person's key takes effect
once. Its record rides in the first save the request makes (store/riding.py), its answer is kept
after, and for ever, as the key's events; the same request again under the key answers that
answer, another request under it is refused (409).

Requests of one process take turns (the caller's ``turn``), so within a process a repeat always
finds the first one answered. A repeat in another process that finds the key taken but not yet
answered waits for the answer, a few seconds at most."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from runledger.application.errors import STORE_ERRORS, BadRequest, Conflict
from runledger.application.services.inputs import person
from runledger.application.store.ledger_app import LedgerApp
from runledger.application.store.riding import Rider, riding
from runledger.domain.keyed import KeyedRequest, fingerprint, key_problem, run_id_for_key
from runledger.domain.text import safe_text

WAIT_S = 10.0
"""How long a repeat waits for the answer to a request another process is still answering."""
POLL_S = 0.05
LOST_AFTER = timedelta(minutes=5)
"""A key another process took this long ago and never answered: that process stopped."""
MAX_KEPT = 1 << 20
"""The largest answer kept (bytes of JSON); a larger one is withheld."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: str
    """JSON text."""
    withheld: str | None = None
    """Why this answer cannot be given again (a secret is shown once): a repeat is refused so."""
    replayed: bool = False


class Once:
    """The keys of one store, as one process uses them."""

    def __init__(self, *, app: LedgerApp, clock: Callable[[], datetime]) -> None:
        self.app = app
        self.clock = clock
        self.unanswered: set[UUID] = set()
        """Keys this process took whose request failed past its first save, unanswered."""

    def call(self, by: str, key: str, method: str, path: str, body: Any) -> KeyedCall:
        """One request under ``by``'s ``key``; BadRequest naming the key when it cannot be one."""
        problem = key_problem(key)
        if problem is not None:
            raise BadRequest(f"idempotency key: {problem}")
        who = person(by, "a request under an idempotency key")
        request = safe_text(f"{method.upper()} {path}", 300)
        return KeyedCall(self, who, key, request, fingerprint(method, path, body))


class KeyedCall:
    def __init__(self, once: Once, by: str, key: str, request: str, printed: str) -> None:
        self.once = once
        self.person = by
        self.key = key
        self.request = request
        self.fingerprint = printed
        self.record_id = KeyedRequest.create_id(by, key)

    @property
    def run_id(self) -> UUID:
        """The run a start under this key makes."""
        return run_id_for_key(self.person, self.key)

    def answer(
        self,
        turn: AbstractContextManager[Any],
        act: Callable[[], Answer],
        failed: Callable[[Exception], Answer | None],
    ) -> Answer:
        """The first answer to this request: ``act``'s, made now in ``turn``, or the one kept.
        ``failed`` says what an error of ``act`` answers, once part of it has been written."""
        deadline = time.monotonic() + WAIT_S
        while True:
            with turn:
                record = self._load()
                if record is None:
                    done = self._perform(act, failed)
                    if done is not None:
                        return done
                    record = self._load()  # another process took the key meanwhile
                kept = self._kept(record)
                if kept is not None:
                    return kept
            if time.monotonic() > deadline:
                raise Conflict(
                    f"idempotency key {self.key!r}: its request is still being answered "
                    f"elsewhere (taken at {_at(record)}); try again in a few seconds"
                )
            time.sleep(POLL_S)

    def _perform(
        self, act: Callable[[], Answer], failed: Callable[[Exception], Answer | None]
    ) -> Answer | None:
        """Act with the key's record riding; None when another request took the key first."""
        rider = Rider(self._taken)
        try:
            with riding(rider):
                done = act()
        except BaseException as error:
            if not isinstance(rider.saved, KeyedRequest):
                if self._taken_elsewhere():
                    return None  # it collided with the first request's record: that one stands
                raise  # nothing was written: a refusal keeps no key
            said = failed(error) if isinstance(error, Exception) else None
            if said is None:
                self.once.unanswered.add(self.record_id)
            else:
                self._keep(rider.saved, said)
            raise
        saved = rider.saved
        try:
            self._keep(saved if isinstance(saved, KeyedRequest) else self._taken(), done)
        except IntegrityError:
            if saved is None and self._taken_elsewhere():
                return None  # nothing of ours was written; the first request's answer stands
            raise
        return done

    def _taken_elsewhere(self) -> bool:
        try:
            return self._load() is not None
        except STORE_ERRORS:
            return False  # the store's trouble: the caller's own error says more

    def _taken(self) -> KeyedRequest:
        return KeyedRequest(
            person=self.person,
            key=self.key,
            request=self.request,
            fingerprint=self.fingerprint,
            at=self.once.clock(),
        )

    def _keep(self, record: KeyedRequest, done: Answer) -> None:
        withheld = done.withheld
        if withheld is None and len(done.body.encode("utf-8", "surrogatepass")) > MAX_KEPT:
            withheld = f"its answer was over {MAX_KEPT:,} bytes and was not kept"
        record.answer(done.status, done.body, withheld, self.once.clock())
        self.once.app.save(record)

    def _kept(self, record: KeyedRequest | None) -> Answer | None:
        """The kept answer to this very request; None while another process is answering it."""
        if record is None:
            return None
        if record.fingerprint != self.fingerprint:
            same = record.request == self.request
            raise Conflict(
                f"idempotency key {self.key!r} was used at {_at(record)} for "
                + (f"{self.request} with another body" if same else record.request)
                + "; a key names one request: use a new key for a new request"
            )
        if record.withheld is not None:
            raise Conflict(
                f"idempotency key {self.key!r}: this request was answered at {_at(record)}, "
                f"but {record.withheld}"
            )
        if record.status is not None:
            return Answer(record.status, record.body, replayed=True)
        lost = record.id in self.once.unanswered or record.taken_at < self.once.clock() - (
            LOST_AFTER
        )
        if lost:
            raise Conflict(
                f"idempotency key {self.key!r}: this request took effect at {_at(record)}, "
                "but its answer was never kept (it failed, or its process stopped); read what "
                "it changed instead of asking again"
            )
        return None

    def _load(self) -> KeyedRequest | None:
        try:
            found: object = self.once.app.repository.get(self.record_id)
        except AggregateNotFoundError:
            return None
        return found if isinstance(found, KeyedRequest) else None


def _at(record: KeyedRequest | None) -> str:
    return "?" if record is None else f"{record.taken_at:%Y-%m-%d %H:%M:%S} UTC"

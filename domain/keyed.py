"""Idempotency keys (SPEC "Idempotent writes"): a person's key names one request. The first
answer to it is kept; the same request again under the key is answered that answer, another
request under it is refused. A key is a person's: another person's same key is another key."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from runledger.domain.errors import DomainError
from runledger.domain.ids import natural_id

MAX_KEY = 200


class KeyAnswered(DomainError):
    """The key's request has been answered already; an answer is kept once."""


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot name a request, or None."""
    if not key.strip():
        return "must not be empty"
    if len(key) > MAX_KEY:
        return f"is {len(key):,} characters; at most {MAX_KEY} are accepted"
    if not key.isprintable():
        return "must not contain control characters"
    return None


def fingerprint(method: str, path: str, body: Any) -> str:
    """What makes two requests the same request: the method, the path and the body as JSON
    reads it (key order and spacing aside)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    said = f"{method.upper()} {path}\n{canonical}"
    return hashlib.sha256(said.encode("utf-8", "surrogatepass")).hexdigest()


def run_id_for_key(person: str, key: str) -> UUID:
    """The one run a start under this key may make: a repeat, however concurrent, collides."""
    return natural_id("keyed-run", person, key)


class KeyedRequest(Aggregate):
    """One person's key: which request it named, and the answer that request was given."""

    class Taken(Aggregate.Created):
        person: str
        key: str
        request: str
        fingerprint: str
        at: datetime

    class Answered(Aggregate.Event):
        status: int
        body: str
        withheld: str | None
        at: datetime

    @staticmethod
    def create_id(person: str, key: str) -> UUID:
        return natural_id("idempotency-key", person, key)

    @event(Taken)
    def __init__(self, person: str, key: str, request: str, fingerprint: str, at: datetime) -> None:
        self.person = person
        self.key = key
        self.request = request
        self.fingerprint = fingerprint
        self.taken_at = at
        self.status: int | None = None
        self.body = ""
        self.withheld: str | None = None

    @property
    def answered(self) -> bool:
        return self.status is not None

    def answer(self, status: int, body: str, withheld: str | None, at: datetime) -> None:
        """Keep the answer; ``withheld`` says why ``body`` is not kept (a secret shown once)."""
        if self.answered:
            raise KeyAnswered(f"the request under key {self.key!r} was answered already")
        self._answered(status=status, body="" if withheld else body, withheld=withheld, at=at)

    @event(Answered)
    def _answered(self, status: int, body: str, withheld: str | None, at: datetime) -> None:
        self.status = status
        self.body = body
        self.withheld = withheld

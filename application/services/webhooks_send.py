"""Sending what the outbox queued: each due delivery claimed (a save the store lets one sender
win), POSTed once with its signature, its attempt recorded, retried after a jittered exponential
back-off until it is answered 2xx or has used its attempts. Any number of processes may send:
a claim makes one of them send a delivery at a time; one that dies mid-send leaves its claim to
lapse and another sends again (at least once: receivers drop repeats by ``Runledger-Delivery``)."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from runledger.application.services.retry_at import retry_at
from runledger.application.services.webhooks import Webhooks
from runledger.application.services.webhooks_addresses import Destinations, Refused
from runledger.application.services.webhooks_sign import signature
from runledger.application.services.webhooks_watch import Watcher
from runledger.application.settings import Settings
from runledger.domain.backoff import Backoff
from runledger.domain.delivery import Delivery, NotDue
from runledger.domain.text import safe_text

log = logging.getLogger("runledger.webhooks")

TIMEOUT_S = 5.0
CLAIM_S = 30.0
"""How long a claim holds: the send's bound with room for its save; a dead sender's lapses."""
BATCH = 20
WATCH_EVERY_S = 15.0
"""How often a sender looks for runners gone and projections stuck."""


@dataclass(frozen=True)
class Answer:
    status: int | None
    error: str | None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect is the receiver's answer, recorded as a failure: following it would send the
    # signed body to wherever a Location points.
    def redirect_request(self, *_: object, **__: object) -> None:
        return None


def opener(destinations: Destinations) -> urllib.request.OpenerDirector:
    """POSTs that connect only to checked addresses, follow no redirect and use no proxy from
    the environment (through a proxy, the address checked would be the proxy's)."""

    # http.client opens its socket through _create_connection((host, port), ...): the one seam
    # where the address connected to is chosen, so the checked one is chosen there. TLS still
    # wraps that socket naming the URL's host (SNI, certificate check).
    def plain(host: str, **given: Any) -> http.client.HTTPConnection:
        connection = http.client.HTTPConnection(host, **given)
        connection._create_connection = destinations.connect  # type: ignore[attr-defined]
        return connection

    def tls(host: str, **given: Any) -> http.client.HTTPSConnection:
        connection = http.client.HTTPSConnection(host, **given)
        connection._create_connection = destinations.connect  # type: ignore[attr-defined]
        return connection

    class Plain(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(plain, req)

    class Tls(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(tls, req, context=self._context)  # type: ignore[attr-defined]

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects, Plain, Tls)


def post(
    url: str, body: bytes, headers: dict[str, str], to: urllib.request.OpenerDirector
) -> Answer:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with to.open(request, timeout=TIMEOUT_S) as answer:
            return Answer(answer.status, None)
    except urllib.error.HTTPError as error:
        return Answer(error.code, None)
    except urllib.error.URLError as error:
        if isinstance(error.reason, Refused):
            return Answer(None, safe_text(f"refused: {error.reason}", 300))
        return Answer(None, safe_text(f"{type(error).__name__}: {error}", 300))
    except (OSError, ValueError) as error:  # refused, reset, timed out, unresolvable
        return Answer(None, safe_text(f"{type(error).__name__}: {error}", 300))


def backoff(settings: Settings) -> Backoff:
    base = settings.webhook_delay_s
    return Backoff(tuple(base * 2**n for n in range(settings.webhook_attempts)), 0.2)


class Sender:
    def __init__(
        self,
        *,
        webhooks: Webhooks,
        settings: Settings,
        clock: Callable[[], datetime],
        worker: str,
        watcher: Watcher | None = None,
        failed: Callable[[str], None] = lambda _event: None,
    ) -> None:
        self.webhooks = webhooks
        self.watcher = watcher
        self.failed = failed
        """Told the event of each attempt that was not answered 2xx (a metric counts them)."""
        self.app = webhooks.app
        self.settings = settings
        self.clock = clock
        self.worker = worker
        self.opener = opener(webhooks.destinations)

    def send_due(self) -> int:
        """Send every delivery due now, one at a time; answers how many were attempted."""
        sent = 0
        for delivery_id in self.webhooks.rows.due(self.clock(), BATCH):
            claimed = self._claim(delivery_id)
            if claimed is not None:
                self._send(claimed)
                sent += 1
        return sent

    def _claim(self, delivery_id: UUID) -> Delivery | None:
        now = self.clock()
        try:
            delivery: Delivery = self.app.repository.get(delivery_id)
            delivery.claim(self.worker, now + timedelta(seconds=CLAIM_S), now)
            self.app.save(delivery)
        except (NotDue, IntegrityError):
            return None  # another sender has it, or had it and settled it
        return delivery

    def _send(self, delivery: Delivery) -> None:
        to = self.webhooks.current(delivery.subscription_id)
        if to is None or not to.enabled:
            self._record(delivery, Answer(None, "the subscription was removed or disabled"), 0)
            return
        body = json.dumps(delivery.body, sort_keys=True).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "runledger-webhooks",
            "Runledger-Event": delivery.fact,
            "Runledger-Delivery": str(delivery.id),
            "Runledger-Signature": signature(to.secret, body, int(self.clock().timestamp())),
        }
        self._record(
            delivery, post(to.url, body, headers, self.opener), self.settings.webhook_attempts
        )

    def _record(self, delivery: Delivery, answer: Answer, allowed: int) -> None:
        now = self.clock()
        attempt = len(delivery.attempts) + 1
        later = retry_at(backoff(self.settings), attempt, allowed, now)
        delivery.attempted(answer.status, answer.error, now, later)
        if delivery.state != "delivered":
            self.failed(delivery.fact)
        try:
            self.app.save(delivery)
        except IntegrityError:
            log.warning("delivery %s: its attempt lost a race and is not recorded", delivery.id)

    def one_round(self, watch: bool) -> None:
        if watch and self.watcher is not None:
            self.watcher.look()
        self.send_due()

    def run(self, stop: threading.Event, every_s: float = 1.0) -> None:
        """Send what comes due until ``stop``, looking for unsaved facts now and then; a
        failing store is said and met again later."""
        looks = max(1, round(WATCH_EVERY_S / every_s))
        rounds = 0
        while not stop.wait(every_s):
            rounds += 1
            try:
                self.one_round(watch=rounds % looks == 1 or looks == 1)
            except Exception as error:  # the loop outlives an outage: said, then met again
                log.warning("webhooks not sent this round: %s", safe_text(error, 300))

    def started(self, stop: threading.Event, every_s: float = 1.0) -> threading.Thread:
        thread = threading.Thread(
            target=self.run, args=(stop, every_s), name="runledger-webhooks", daemon=True
        )
        thread.start()
        return thread

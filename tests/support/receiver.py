"""A real HTTP receiver for webhooks: a threaded http.server on a spare port that keeps what it
was sent and answers each POST with the next status of its script (then 200)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Network

LOCAL = "127.0.0.1/32"
"""Where every receiver listens: RUNLEDGER_WEBHOOK_ALLOW_NETWORKS must allow it."""
LOCAL_NETWORKS = (IPv4Network(LOCAL),)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)


@contextmanager
def receiving(*statuses: int) -> Iterator[Receiver]:
    receiver = Receiver(url="", statuses=list(statuses))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                receiver.received.append(Received(self.path, dict(self.headers), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()

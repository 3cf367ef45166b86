"""A TCP forwarder in front of the shared PostgreSQL, so a test can cut a runner off its store
and mend it again without touching the server other tests use."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class Proxy:
    """Listens on a spare local port and forwards each connection to ``target``. ``cut()``
    drops every open connection and refuses new ones until ``mend()``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.open.clear()
        with self.lock:
            for sock in self.sockets:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self.sockets.clear()

    def mend(self) -> None:
        self.open.set()

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open.is_set():
                client.close()  # the store is "down": the connection is refused at once
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, server]
            for one, other in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(one, other), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

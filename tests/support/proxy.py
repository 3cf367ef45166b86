"""A TCP forwarder in front of the shared PostgreSQL, so a test can cut a runner off its store
(or black-hole it) and mend it again without touching the server other tests use."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class Proxy:
    """Listens on a spare local port and forwards each connection to ``target``. ``cut()``
    drops every open connection and refuses new ones until ``mend()``. ``black_hole()`` closes
    nothing and answers nothing: connections are accepted, bytes are taken and held, as a
    network that drops packets looks to both ends (their kernels still acknowledge, here the
    proxy's does), until ``mend()`` lets what was held through, as retransmission would."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.flowing = threading.Event()
        self.flowing.set()
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

    def black_hole(self) -> None:
        self.flowing.clear()

    def mend(self) -> None:
        self.open.set()
        self.flowing.set()

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.flowing.set()  # whatever was held goes nowhere now, and its threads end
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
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        self.flowing.wait()  # black-holed: the client's hello waits here, unanswered
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        with self.lock:
            self.sockets += [client, server]
        for one, other in ((client, server), (server, client)):
            threading.Thread(target=self._pipe, args=(one, other), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                self.flowing.wait()
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

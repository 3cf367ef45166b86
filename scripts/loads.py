"""How a read is timed by the benchmarks: in-process, to the first byte, under wrk's closed loop,
and under clients that each ask at a steady pace.

wrk's closed loop measures the most a server can answer: with N clients each waiting for its
answer before the next, each waits about N / throughput whatever the server's latency at a
normal load. The paced clients (an open loop, as people and dashboards ask) measure that latency
at a stated load: an answer's time counts from when its request was due, so a slow answer that
holds back the next request is counted against the server too (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx


@dataclass(frozen=True)
class Paced:
    rate: float
    """Requests per second asked, all clients together."""
    answered: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def paced(url: str, token: str, *, clients: int, rate: float, seconds: float) -> Paced:
    """``clients`` keep-alive connections asking ``url`` at ``rate`` per second in all."""
    return asyncio.run(_paced(url, token, clients, rate, seconds))


async def _paced(url: str, token: str, clients: int, rate: float, seconds: float) -> Paced:
    parts = urlsplit(url)
    request = (
        f"GET {parts.path}{'?' + parts.query if parts.query else ''} HTTP/1.1\r\n"
        f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n\r\n"
    ).encode()
    every = clients / rate
    start = time.perf_counter() + 0.2
    counted = start + 1.0  # the first second warms the server's pool and caches up
    ends = counted + seconds
    took: list[float] = []

    async def client(n: int) -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        due = start + n * every / clients  # the clients spread over one period
        try:
            while due < ends:
                pause = due - time.perf_counter()
                if pause > 0:
                    await asyncio.sleep(pause)
                writer.write(request)
                await _answer(reader)
                if due >= counted:
                    took.append((time.perf_counter() - due) * 1000)
                due += every
        finally:
            writer.close()

    await asyncio.gather(*(client(n) for n in range(clients)))
    cuts = statistics.quantiles(took, n=100)
    return Paced(rate, len(took), cuts[49], cuts[98], max(took))


async def _answer(reader: asyncio.StreamReader) -> None:
    """Reads one answer with a Content-Length; anything but 200 stops the measurement."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b" ", 2)[1]
    if status != b"200":
        raise RuntimeError(f"answered {status.decode()}: {head[:200]!r}")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            await reader.readexactly(int(value))
            return
    raise RuntimeError("an answer without Content-Length")


def in_process(fn: Callable[[], object], seconds: float) -> tuple[float, float, float]:
    """(calls/s, p50 ms, p99 ms) of ``fn`` called back to back for ``seconds``, one at a time."""
    fn()  # the first call catches the projections up with what the HTTP run wrote
    took: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(took) < 30:
        started = time.perf_counter()
        fn()
        took.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(took, n=100)
    return len(took) / sum(took) * 1000, cuts[49], cuts[98]


def first_bytes(client: httpx.Client, path: str, requests: int) -> tuple[float, float]:
    """(p50 ms, p99 ms) to the first body byte, one request at a time."""
    took: list[float] = []
    for i in range(requests + 3):
        started = time.perf_counter()
        with client.stream("GET", path) as answer:
            chunks = answer.iter_raw()
            next(chunks, b"")
            reached = time.perf_counter()
            for _ in chunks:
                pass
        if answer.status_code != 200:
            raise SystemExit(f"GET {path} answered {answer.status_code}")
        if i >= 3:
            took.append((reached - started) * 1000)
    cuts = statistics.quantiles(took, n=100)
    return cuts[49], cuts[98]


@dataclass(frozen=True)
class Wrk:
    rate: float
    """Requests answered a second."""
    p50_ms: float
    p99_ms: float
    done: int
    errors: bool
    """Some answers were not 2xx or 3xx."""


def wrk(url: str, token: str, seconds: float, connections: int, method: str = "GET") -> Wrk:
    """What wrk measures with ``connections`` at once, each asking again as soon as answered."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "{method}"\nwrk.headers["Authorization"] = "Bearer {token}"\n')
    try:
        out = subprocess.run(
            [
                "wrk",
                "-t2",
                f"-c{connections}",
                f"-d{seconds}s",
                "--latency",
                "-s",
                script.name,
                url,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script.name)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return Wrk(rate, _ms(out, "50%"), _ms(out, "99%"), done, "Non-2xx" in out)


def _ms(out: str, label: str) -> float:
    found = re.search(rf"{re.escape(label)}\s+([\d.]+)(us|ms|s)\b", out)
    if found is None:
        return float("nan")
    value, unit = float(found.group(1)), found.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

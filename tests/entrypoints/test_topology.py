"""OPERATING.md's production layout, as processes: an `init` job, two `serve` replicas sharing
RUNLEDGER_SESSION_SECRET, two runners, one PostgreSQL. A steady stream of runs goes through the
API; mid-stream the process holding the projector's role and one `serve` are SIGKILLed. Every run
still completes, the views come level with the store again, and `rebuild --verify` finds them
identical to a rebuild.

Which process projects is read from the server: the role is a session advisory lock
(projections/role.py), and each process names itself in the URL's application_name, so pg_locks
and pg_stat_activity say whose session holds it. Every process is this test's own child, started
on spare ports and ended by its pid."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
import pytest

from scripts.pg import drop_pg_url, new_pg_url
from tests.support.api_support import bearer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
RUNLEDGER = [sys.executable, "-c", "from runledger.application.cli.app import main; main()"]
ROLE = """
    SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s
      AND l.objid = ((hashtext(%s)::bigint + 4294967296) %% 4294967296)::oid
      AND a.datname = current_database()
"""
ROLE_LOCK = 0x726C70  # projections/role.py's lock class: read from the server, not imported
STREAM = 24  # runs started through the API, one every ~0.25 s
KILL_AFTER = 8  # runs started before the two SIGKILLs
WAIT_S = 120.0  # generous: the machine is shared; nothing here is a timing assertion
T = TypeVar("T")


def spare_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def within(found: Callable[[], T | None], wait_s: float) -> T | None:
    """``found``'s first truthy answer within ``wait_s`` seconds, else None."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        answer = found()
        if answer:
            return answer
        time.sleep(0.2)
    return None


def until(what: str, found: Callable[[], T | None], wait_s: float = WAIT_S) -> T:
    answer = within(found, wait_s)
    assert answer, f"{what} did not happen within {wait_s:g} s"
    return answer


SPEC = {
    "name": "topology",
    "phases": [
        {
            "id": "spawn",
            "steps": [{"id": "crow", "action": "sandbox.spawn", "params": {"kind": "crow"}}],
        }
    ],
}


@dataclass
class Layout:
    """The store's processes, by name: each one a child of this test."""

    url: str
    folder: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    def named(self, name: str) -> dict[str, str]:
        """The environment of the process ``name``: the URL names it to the server."""
        return {**self.env, "RUNLEDGER_DATABASE_URL": f"{self.url}&application_name={name}"}

    def run(self, *args: str) -> Any:
        done = subprocess.run(
            [*RUNLEDGER, *args], env=self.named("cli"), capture_output=True, timeout=WAIT_S
        )
        assert done.returncode == 0, (args, done.stdout.decode(), done.stderr.decode())
        return json.loads(done.stdout) if "--json" in args else None

    def start(self, name: str, *args: str) -> None:
        with (self.folder / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                [*RUNLEDGER, *args], env=self.named(name), stdout=log, stderr=subprocess.STDOUT
            )

    def serve(self, name: str) -> None:
        self.ports[name] = spare_port()
        self.start(name, "serve", "--no-runner", "--port", str(self.ports[name]))

    def alive(self, name: str) -> bool:
        return self.procs[name].poll() is None

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)  # this test's own child, by its pid
        self.procs[name].wait(timeout=30)

    def projector(self) -> str | None:
        schema = self.url.rsplit("schema=", 1)[1]
        admin = self.url.split("?", 1)[0]
        with psycopg.connect(admin, autocommit=True) as conn:
            rows = conn.execute(ROLE, [ROLE_LOCK, schema]).fetchall()
        return str(rows[0][0]) if rows else None

    def logs(self) -> str:
        return "\n".join(
            f"--- {name}\n{(self.folder / f'{name}.log').read_text(errors='replace')[-1500:]}"
            for name in self.procs
        )

    def end(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture
def layout(pg_admin: str, tmp_path: Path) -> Iterator[Layout]:
    url = new_pg_url(pg_admin)  # an empty schema: the init job makes the tables
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNLEDGER_", "EVENT_"))}
    env |= {
        "RUNLEDGER_BUILTIN_MODULES": "sandbox",
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        "RUNLEDGER_SESSION_SECRET": uuid.uuid4().hex,
        "RUNLEDGER_RETRY_DELAYS_S": "0.5",
        "POSTGRES_POOL_SIZE": "2",
        "POSTGRES_MAX_OVERFLOW": "4",
        "COLUMNS": "200",
    }
    it = Layout(url, tmp_path, env)
    try:
        yield it
    finally:
        it.end()
        drop_pg_url(pg_admin, url)


class Balancer:
    """What a load balancer does for the stream: the next replica that answers."""

    def __init__(self, layout: Layout, secret: str) -> None:
        self.layout = layout
        self.headers = bearer(secret)
        self.turn = 0

    def send(self, method: str, path: str, **given: Any) -> httpx.Response:
        """``method path`` to the next live replica; a write under one Idempotency-Key, so that
        asking again after a replica died under it, or answered 503, starts nothing twice."""
        headers = {**self.headers, "Idempotency-Key": str(uuid.uuid4())}
        names = sorted(self.layout.ports)
        for _ in range(4 * len(names)):
            self.turn += 1
            name = names[self.turn % len(names)]
            if not self.layout.alive(name):
                continue
            try:
                answer = httpx.request(
                    method,
                    f"http://127.0.0.1:{self.layout.ports[name]}{path}",
                    headers=headers,
                    timeout=30,
                    **given,
                )
            except httpx.TransportError:
                continue  # a replica killed under the request: the balancer tries another
            if answer.status_code != 503:
                return answer
            time.sleep(0.2)  # the store's projector is being taken over: ask again
        raise AssertionError(f"no replica answered {method} {path}:\n{self.layout.logs()}")


def stream(balancer: Balancer, started: list[str], killed: threading.Event) -> None:
    for n in range(STREAM):
        answer = balancer.send("POST", "/admin/events/runs", json=SPEC)
        assert answer.status_code == 201, answer.text
        started.append(answer.json()["run"]["run_id"])
        if n + 1 == KILL_AFTER:
            killed.wait(timeout=WAIT_S)
        time.sleep(0.25)


def test_killing_the_projector_and_a_serve_mid_stream_loses_no_run(layout: Layout) -> None:
    layout.run("init")  # the init job, before anything else starts
    secret = layout.run("token", "create", "alice", "--role", "operator", "--json")["secret"]
    for name in ("runner-1", "runner-2"):
        layout.start(name, "runner", "--interval", "0.2", "--worker", name)
    # The runners start first, so that the role is a runner's when the stream begins. A store
    # with no role (SQLite's way: every process projects for itself) loses runner-1 instead.
    first = within(layout.projector, 30)
    for name in ("serve-a", "serve-b"):
        layout.serve(name)
    for name in ("serve-a", "serve-b"):
        until(f"{name} answered /healthz", _healthz(layout.ports[name]))

    balancer = Balancer(layout, secret)
    started: list[str] = []
    killed = threading.Event()
    sender = threading.Thread(target=stream, args=(balancer, started, killed))
    sender.start()
    until("the stream reached the kill", lambda: len(started) >= KILL_AFTER)
    victim = first or "runner-1"
    assert victim.startswith("runner-"), victim
    layout.kill(victim)
    layout.kill("serve-b")
    killed.set()
    sender.join(timeout=WAIT_S)
    assert not sender.is_alive() and len(started) == STREAM, layout.logs()

    def every_run_done() -> bool:
        page = balancer.send("GET", "/admin/events/runs", params={"limit": 200}).json()
        shown = {run["run_id"]: run for run in page["items"]}
        return all(
            shown.get(run, {}).get("status") == "completed"
            and shown[run]["cleanup_status"] == "complete"
            for run in started
        )

    until("every run completed and was given back", every_run_done)
    if first is not None:
        heir = until("another process took the projector's role", layout.projector, 30)
        assert heir != victim and layout.alive(heir), (first, heir)

    def level() -> bool:
        views = balancer.send("GET", "/admin/projections", params={"limit": 200}).json()
        return all(view["lag"] == 0 and view["stuck_at"] is None for view in views["items"])

    until("the views came level with the store", level, 30)
    verified = layout.run("rebuild", "--verify", "--json")
    assert verified["differences"] == [], verified


def _healthz(port: int) -> Callable[[], bool]:
    def answers() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    return answers

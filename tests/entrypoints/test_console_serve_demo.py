"""`runledger serve --demo` as a person starts it: a real process in an empty folder, whose
printed address and token sign in to the console and to the API, that stops on Ctrl-C with exit
code 0, and that starts again in the same folder."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from runledger.application.cli.serve import listen
from tests.conftest import drop_pg_url, new_pg_url
from tests.support.api_support import bearer
from tests.support.console_support import csrf_of, spare_port, text_of

RUNLEDGER = [sys.executable, "-c", "from runledger.application.cli.app import main; main()"]
WAIT_S = 30.0
STOP_S = 15.0
DEMO_RUNS = {"Harvest festival", "Night market", "Parade", "Duel at dusk"}

pytestmark = pytest.mark.slow


@dataclass
class Demo:
    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def said(self) -> str:
        return f"stdout: {self.output()[-3000:]}\nstderr: {self.err.read_text()[-3000:]}"

    def until(self, what: str, done: Callable[[], Any]) -> Any:
        """Poll ``done`` until it answers something truthy, or fail saying what never happened."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve --demo exited: {self.said()}"
            found = done()
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"{what} within {WAIT_S:g}s; {self.said()}")

    def printed(self) -> tuple[str, str]:
        """The address and the token, read off what the process printed, as a person would."""
        found: tuple[str, str] = self.until("the address and token were printed", self.banner)
        return found

    def banner(self) -> tuple[str, str] | None:
        out = self.output()
        url = re.search(r"runledger console\s+(http://\S+)", out)
        token = re.search(r"sign-in token\s+(rl_\S+)", out)
        return (url.group(1), token.group(1)) if url and token else None

    def interrupt(self) -> int:
        """Ctrl-C, to our own child by its pid; its exit code."""
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"serve --demo ignored Ctrl-C: {self.said()}") from None


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This machine's environment without runledger's settings: the demo's defaults."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    return environ | {"COLUMNS": "200"} | (extra or {})


@contextmanager
def serving_demo(folder: Path, env: dict[str, str], port: int) -> Iterator[Demo]:
    out, err = folder / f"demo-{port}.out", folder / f"demo-{port}.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [*RUNLEDGER, "serve", "--demo", "--port", str(port), "--interval", "0.2"],
            cwd=folder,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
    try:
        yield Demo(process, out, err)
    finally:
        if process.poll() is None:
            process.kill()  # this test's own child, by its pid
            process.wait(timeout=10)


def sign_in(client: httpx.Client, token: str) -> httpx.Response:
    """Sign in to the console as its form does: the CSRF token from GET /signin, the session
    cookie that came with it, the token pasted."""
    form = client.get("/signin")
    assert form.status_code == 200, form.text
    answer = client.post(
        "/signin", data={"token": token, "csrf": csrf_of(form.text), "next": "/runs"}
    )
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/runs"
    return answer


def runs_shown(client: httpx.Client) -> str | None:
    """The runs page once it lists every run of the demo's story."""
    page = client.get("/runs")
    assert page.status_code == 200, page.text
    return page.text if all(name in text_of(page.text) for name in DEMO_RUNS) else None


def api_runs(client: httpx.Client, token: str) -> list[dict[str, Any]]:
    answer = client.get("/admin/events/runs", params={"limit": 100}, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    runs: list[dict[str, Any]] = answer.json()["items"]
    return runs


def story_told(client: httpx.Client, token: str, times: int) -> list[dict[str, Any]] | None:
    """The API's runs once ``times`` stories have ended every run they started."""
    runs = api_runs(client, token)
    ours = [r for r in runs if r["name"] in DEMO_RUNS]
    done = len(ours) == 4 * times and all(r["status"] != "running" for r in ours)
    return ours if done else None


def test_serve_demo_prints_an_address_and_a_token_that_sign_in_stops_on_ctrl_c_and_starts_again(
    tmp_path: Path,
) -> None:
    port = spare_port()
    with serving_demo(tmp_path, environment(), port) as demo:
        url, token = demo.printed()
        assert url == f"http://127.0.0.1:{port}/"
        first_line = demo.output().strip().splitlines()[0]
        assert url in first_line, "the address is the first thing a person reads"
        with httpx.Client(base_url=url, timeout=10) as client:
            assert client.get("/runs").status_code == 303  # not signed in: to the sign-in page
            sign_in(client, token)
            shown = demo.until("the runs page showed the demo's runs", lambda: runs_shown(client))
            assert "Signed in as <strong data-actor>demo</strong> (operator)" in shown
            ours = demo.until("the story ended its runs", lambda: story_told(client, token, 1))
            assert {(r["name"], r["status"]) for r in ours} == {
                ("Harvest festival", "completed"),
                ("Night market", "completed"),
                ("Parade", "cancelled"),
                ("Duel at dusk", "aborted"),
            }
            [festival] = [r["run_id"] for r in ours if r["name"] == "Harvest festival"]
            run_page = text_of(client.get(f"/runs/{festival}").text)
            # The drift the story leaves for a person, and the button an operator has for it.
            assert 'the value is now "storm"' in run_page
            assert "Retry cleanup" in run_page
            refused = client.get("/admin/events/runs", headers=bearer(token + "x"))
            assert refused.status_code == 401
        assert demo.interrupt() == 0, demo.said()
    assert (tmp_path / "runledger.sqlite3").exists()  # the default store, in the folder
    assert (tmp_path / "sandbox.sqlite3").exists()
    assert "Traceback" not in demo.said()

    # Again in the same folder: the story told a second time beside the first, a new token.
    with serving_demo(tmp_path, environment(), spare_port()) as again:
        url, second = again.printed()
        assert second != token
        with httpx.Client(base_url=url, timeout=10) as client:
            again.until("the second story ended its runs", lambda: story_told(client, second, 2))
            sign_in(client, second)
            assert runs_shown(client)
        assert again.interrupt() == 0, again.said()
    assert "the demo's story stopped" not in again.said()
    assert "Traceback" not in again.said()


def test_serve_demo_plays_into_postgresql_when_the_url_says_so(
    tmp_path: Path, pg_admin: str
) -> None:
    url = new_pg_url(pg_admin)
    try:
        env = environment({"RUNLEDGER_DATABASE_URL": url})
        with serving_demo(tmp_path, env, spare_port()) as demo:
            address, token = demo.printed()
            assert "PostgreSQL at" in demo.output()
            with httpx.Client(base_url=address, timeout=10) as client:
                demo.until("the story ended its runs", lambda: story_told(client, token, 1))
            demo.process.send_signal(signal.SIGTERM)  # our own child, by its pid
            assert demo.process.wait(timeout=STOP_S) == 0, demo.said()
        assert not (tmp_path / "runledger.sqlite3").exists()
    finally:
        drop_pg_url(pg_admin, url)


def test_a_port_already_taken_is_one_sentence_before_any_story_is_played(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*RUNLEDGER, "serve", "--demo", "--port", str(port)],
            cwd=tmp_path,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"--host/--port: cannot listen on 127.0.0.1:{port}" in done.stdout
    assert "sign-in token" not in done.stdout
    assert not (tmp_path / "runledger.sqlite3").exists()  # nothing played, nothing written
    assert "Traceback" not in done.stdout + done.stderr


def test_answers_on_a_kept_alive_connection_go_out_without_waiting_for_an_ack() -> None:
    """serve makes its own listening socket; asyncio sets TCP_NODELAY on what it accepts only
    when the socket is made as TCP by name, and without it every answer on a kept-alive
    connection waited ~40 ms for the client's delayed ACK."""
    listening = listen("127.0.0.1", 0)

    async def nodelay() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            own = writer.get_extra_info("socket")
            accepted.set_result(own.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        async with await asyncio.start_server(on_connect, sock=listening):
            _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
            try:
                return await asyncio.wait_for(accepted, 5)
            finally:
                writer.close()

    # In a thread of its own: where the session's Playwright lives, this thread's event loop
    # is already running and asyncio.run refuses.
    with ThreadPoolExecutor(1) as own:
        assert own.submit(lambda: asyncio.run(nodelay())).result() != 0

"""The CLI through a real `runledger serve`, on an SQLite file and on PostgreSQL: an operator's
token cancels a run and its log names the token's person; --by is refused; a viewer's act, a
server that cannot be reached and a token the server refuses are one sentence and exit 1;
`login` keeps its contexts in a file only its owner can read, and `context use` switches.

The commands run as an operator's shell would start them (forked from a process that imported
the CLI; `login` as a process of its own, its token on stdin)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from uuid import UUID

import pytest

from runledger.application.cli import exits
from tests.entrypoints.test_api_serve import (
    Served,
    env,
    served,
    spare_port,
    world,
)
from tests.entrypoints.test_cli_json import spec
from tests.support.forked_cli import ForkedCli

__all__ = ["env", "served", "world"]

pytestmark = pytest.mark.slow

Done = subprocess.CompletedProcess[str]


@pytest.fixture
def forked(cli_server: ForkedCli) -> ForkedCli:
    """The module's CLI (conftest.cli_server): its import paid once, not once a test."""
    return cli_server


@pytest.fixture
def address(served: Served) -> str:
    return str(served.client.base_url).rstrip("/")


def through(env: dict[str, str], address: str, secret: str) -> dict[str, str]:
    """The environment of a script that talks to the server with a token."""
    return env | {"RUNLEDGER_SERVER": address, "RUNLEDGER_TOKEN": secret}


def one_sentence(done: Done, code: int, *said: str) -> None:
    out = done.stdout + done.stderr
    assert done.returncode == code, out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1, out
    for words in said:
        assert words in " ".join(out.split()), out


def token(forked: ForkedCli, env: dict[str, str], name: str, role: str) -> str:
    """A token from `runledger token create`, on the store directly (an administrator's door)."""
    done = forked.run("token", "create", name, "--role", role, "--json", cwd=forked.folder, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    secret: str = json.loads(done.stdout)["secret"]
    return secret


def held_run(forked: ForkedCli, folder: Path, environ: dict[str, str]) -> UUID:
    (folder / "held.json").write_text(json.dumps(spec("held", advance="manual")))
    started = forked.run("start", "held.json", cwd=folder, env=environ)
    assert started.returncode == 0, started.stdout + started.stderr
    return UUID(started.stdout.strip())


def test_an_operator_s_token_cancels_a_run_in_its_person_s_name_and_by_is_refused(
    forked: ForkedCli, served: Served, env: dict[str, str], address: str, tmp_path: Path
) -> None:
    olga = through(env, address, token(forked, env, "olga", "operator"))
    run = held_run(forked, tmp_path, olga)
    refused = forked.run("cancel", str(run), "--by", "mallory", cwd=tmp_path, env=olga)
    one_sentence(refused, exits.USAGE, "--by is refused through a server")
    cancelled = forked.run("cancel", str(run), "--no-cleanup", cwd=tmp_path, env=olga)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert "kept by olga" in cancelled.stdout
    # The store read directly (an administrator's door) says who: the token's person.
    shown = forked.run("log", str(run), "--json", cwd=tmp_path, env=env)
    found = json.loads(shown.stdout)
    assert found["run"]["run"]["ended_by"] == "olga"
    said = [line["detail"] for line in found["log"]["lines"] if line["kind"] == "run.cancelled"]
    assert said and said[-1].get("by") == "olga", found["log"]["lines"]
    assert "mallory" not in shown.stdout
    assert "by=olga" in forked.run("log", str(run), cwd=tmp_path, env=olga).stdout


def test_a_viewer_s_act_a_server_away_and_a_wrong_token_are_one_sentence_and_exit_1(
    forked: ForkedCli, served: Served, env: dict[str, str], address: str, tmp_path: Path
) -> None:
    run = held_run(forked, tmp_path, through(env, address, token(forked, env, "olga", "operator")))
    vic = through(env, address, token(forked, env, "vic", "viewer"))
    assert str(run) in forked.run("runs", cwd=tmp_path, env=vic).stdout  # a viewer reads
    refused = forked.run("cancel", str(run), cwd=tmp_path, env=vic)
    one_sentence(refused, exits.FAILED, "vic is a viewer; this needs an operator")
    as_json = forked.run("cancel", str(run), "--json", cwd=tmp_path, env=vic)
    assert as_json.returncode == exits.FAILED
    assert "vic is a viewer" in json.loads(as_json.stdout)["detail"]
    away = through(env, f"http://127.0.0.1:{spare_port()}", "whatever")
    one_sentence(forked.run("runs", cwd=tmp_path, env=away), exits.FAILED, "cannot reach")
    wrong = through(env, address, "not-a-token")
    one_sentence(forked.run("runs", cwd=tmp_path, env=wrong), exits.FAILED, "refused the token")
    alone = env | {"RUNLEDGER_SERVER": address}
    one_sentence(forked.run("runs", cwd=tmp_path, env=alone), exits.FAILED, "go together")
    for url, said in (
        ("http://[::", "is not a server's address"),
        ("http://a\x01b", "is not a server's address"),
        ("file:///etc/passwd", "is not a server's address"),
        (address, "RUNLEDGER_TOKEN: not a token runledger issues"),
    ):
        hostile = through(env, url, "caf\u00e9 \x1b[2J" if url == address else "x")
        one_sentence(forked.run("runs", cwd=tmp_path, env=hostile), exits.FAILED, said)
    assert forked.run("runs", cwd=tmp_path, env=env).returncode == 0  # the store: still there


def login(forked: ForkedCli, env: dict[str, str], folder: Path, secret: str, *args: str) -> Done:
    return forked.run("login", *args, cwd=folder, env=env, input=f"{secret}\n")


def test_login_keeps_contexts_in_a_file_only_its_owner_reads_and_use_switches_them(
    forked: ForkedCli, served: Served, env: dict[str, str], address: str, tmp_path: Path
) -> None:
    home = env | {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    operator, viewer = token(forked, env, "olga", "operator"), token(forked, env, "vic", "viewer")
    run, other = (held_run(forked, tmp_path, through(env, address, operator)) for _ in "ab")
    signed = login(forked, home, tmp_path, operator, address, "--name", "ops")
    assert signed.returncode == 0, signed.stdout + signed.stderr
    assert "as olga (operator); context ops is current" in " ".join(signed.stdout.split())
    assert operator not in signed.stdout + signed.stderr
    saved = tmp_path / "config" / "runledger" / "contexts.toml"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert login(forked, home, tmp_path, viewer, address, "--name", "look").returncode == 0
    listed = forked.run("context", "list", "--json", cwd=tmp_path, env=home)
    assert json.loads(listed.stdout) == [
        {"name": "look", "server": address, "current": True},
        {"name": "ops", "server": address, "current": False},
    ]
    assert operator not in listed.stdout and viewer not in listed.stdout
    # The current context is the viewer's: reading goes, acting is refused.
    one_sentence(forked.run("cancel", str(run), cwd=tmp_path, env=home), exits.FAILED, "viewer")
    # A script's RUNLEDGER_SERVER and RUNLEDGER_TOKEN win over the saved context.
    scripted = forked.run("cancel", str(run), cwd=tmp_path, env=through(home, address, operator))
    assert scripted.returncode == 0 and scripted.stdout.strip() == "cancelled", scripted.stdout
    assert forked.run("context", "use", "ops", cwd=tmp_path, env=home).returncode == 0
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    cancelled = forked.run("cancel", str(other), cwd=tmp_path, env=home)
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == "cancelled"
    unknown = forked.run("context", "use", "nowhere", cwd=tmp_path, env=home)
    one_sentence(unknown, exits.FAILED, "no context 'nowhere' (saved: look, ops)")
    refused = login(forked, home, tmp_path, "not-a-token", address)
    one_sentence(refused, exits.FAILED, "refused the token")
    assert json.loads(forked.run("context", "list", "--json", cwd=tmp_path, env=home).stdout)[
        1
    ] == {"name": "ops", "server": address, "current": True}  # a refused login saves nothing
    assert os.stat(saved).st_mode & 0o077 == 0
    assert forked.run("context", "unset", cwd=tmp_path, env=home).returncode == 0
    direct = forked.run("cancel", str(run), cwd=tmp_path, env=home)  # the store: --by needed
    one_sentence(direct, exits.USAGE, "--by NAME is needed")
    assert [
        c["current"]
        for c in json.loads(forked.run("context", "list", "--json", cwd=tmp_path, env=home).stdout)
    ] == [False, False]


class Answering(BaseHTTPRequestHandler):
    """A server that is not runledger's, or one in trouble: every request gets ``said``."""

    said: tuple[int, dict[str, str], bytes] = (200, {}, b"")

    def do_GET(self) -> None:
        status, headers, body = self.said
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def odd_server() -> Iterator[tuple[str, type[Answering]]]:
    handler = type("Handler", (Answering,), {})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_whatever_a_server_answers_the_cli_says_one_sentence(
    forked: ForkedCli, odd_server: tuple[str, type[Answering]], tmp_path: Path
) -> None:
    url, handler = odd_server
    problem = {"Content-Type": "application/problem+json"}
    for said, words in (
        ((500, {"Content-Type": "text/html"}, b"<h1>oops</h1>"), "answered 500"),
        ((503, problem, b'{"detail": "the store is away"}'), "503: the store is away"),
        ((429, {"Retry-After": "7"}, b'{"detail": "slow down"}'), "asks to wait 7 s: slow down"),
        ((200, {}, b"<html>not json</html>"), "did not answer as runledger's API does"),
        ((200, {}, b"[1, 2]"), "is not what this runledger"),
        ((200, {}, b'{"items": [{"run_id": 5}], "next_cursor": null}'), "is not what"),
        ((404, {}, json.dumps({"detail": "\x1b[2J" + "x" * 5_000}).encode()), "\\x1b[2J"),
    ):
        handler.said = said
        done = forked.run("runs", cwd=tmp_path, env=through({}, url, "rl_token"))
        one_sentence(done, exits.FAILED, words)
        assert "\x1b" not in done.stdout and len(done.stdout) < 2_100

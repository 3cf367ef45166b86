"""Everything printed is escaped, and no screen prints without bound (issue 8, cases 3 and 7).

Runs are made in-process by a module that answers with markup, HTML and terminal control
sequences in every string it can; the real CLI then reads the same store (SQLite and
PostgreSQL) in a subprocess, and each value must appear as typed, never obeyed.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from tests.conftest import Cli
from tests.entrypoints.test_cli import RUNLEDGER
from tests.support.playing import Clock, phase, spec, step
from tests.support.reading import row, tick

# Commands in processes of their own: in the slow tier, and started first.
pytestmark = pytest.mark.slow

ALERT = "[bold red]ALERT[/bold red]"
SCRIPT = "<script>alert(1)</script>"
CLOSE = "[/] oops"
CLEAR = "\x1b[2J"
RED = "\x1b[31m"
ERROR = f"{CLOSE} {ALERT} {RED}red{SCRIPT}"
KIND = "[red]crow[/red]"
REF = f"[/]{CLEAR}{SCRIPT}"
NAMES = {
    "close": CLOSE,
    "alert": ALERT,
    "escape": f"red {RED} alert",
    "script": SCRIPT,
    "plain": "plain festival",
}


def hostile_module(registry: Registry) -> None:
    """A module every string of which is markup, HTML or control sequences."""
    module = registry.module("screen")

    def spawn(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        return {"ok": True, "resources": [{"kind": KIND, "ref": REF, "payload": {"n": ALERT}}]}

    def refuse(resources: list[Any], idempotency_key: str, run_id: str) -> Any:
        return {"ok": False, "retry": False, "error": ERROR}

    def fail(params: dict[str, Any], idempotency_key: str, run_id: str) -> Any:
        raise RuntimeError(ERROR)

    def quiet(**_: Any) -> Any:
        return {"ok": True, "resources": []}

    module.action("screen.spawn", perform=spawn, revert=refuse)
    module.action("screen.fail", perform=fail, revert=lambda **_: {"ok": True})
    module.action("screen.quiet", perform=quiet, revert=lambda **_: {"ok": True})
    module.lease(
        "screen.sky",
        apply=lambda target, value, run_id, idempotency_key: {
            "ok": True,
            "baseline": f"{ALERT}{CLEAR}",
            "applied": value,
        },
        restore=lambda **_: {"drifted": True, "current": f"{SCRIPT}{RED}"},
    )


@dataclass
class Hostile:
    url: str
    runs: dict[str, UUID]
    entry: UUID
    lease: UUID

    @property
    def env(self) -> dict[str, str]:
        return {"RUNLEDGER_DATABASE_URL": self.url}


@pytest.fixture
def rl(opened: Callable[..., Runledger], registry: Registry) -> Runledger:
    """A runledger on the test's clock, with the hostile module registered."""
    hostile_module(registry)
    return opened()


@pytest.fixture
def hostile(rl: Runledger, store_url: str, clock: Clock) -> Hostile:
    started = rl.runs.start

    def start(document: dict[str, Any]) -> UUID:
        clock.advance(1)  # runs list newest first: each its own second
        return started(document)

    sky = {
        "lease": "screen.sky",
        "target": f"north{CLEAR}",
        "value": f"[/]{RED}",
        "duration_s": 600,
    }
    runs = {
        "close": start(
            spec(
                phase("p1", step("spawn", "screen.spawn"), step("sky", "core.lease", **sky)),
                name=CLOSE,
            )
        ),
        "alert": start(spec(phase("p1", step("s1", "screen.fail")), name=ALERT)),
        "escape": start(spec(phase("p1", step("q", "screen.quiet")), name=NAMES["escape"])),
        "script": start(spec(phase("p1", step("q", "screen.quiet")), name=SCRIPT)),
        "plain": start(spec(phase("p1", step("q", "screen.quiet")), name="plain festival")),
    }
    tick(rl, 4)
    assert row(rl, runs["close"]).cleanup_status == "incomplete"
    assert row(rl, runs["alert"]).status == "aborted"
    entries = {e.kind: e.entry_id for e in rl.queries.entries(runs["close"])}
    return Hostile(store_url, runs, entries[KIND], entries["override"])


def shown(done: subprocess.CompletedProcess[str], code: int = 0) -> str:
    """A command's output, once it is known to have exited ``code`` (0 unless told: 3 is `log`
    of a run whose cleanup is incomplete) without obeying any data."""
    assert done.returncode == code, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return done.stdout


def test_runs_and_log_show_hostile_names_refs_and_errors_as_typed(
    cli: Cli, hostile: Hostile, tmp_path: Path
) -> None:
    listed = shown(cli("runs", cwd=tmp_path, env=hostile.env))
    for name in (CLOSE, ALERT, SCRIPT, "red \\x1b[31m alert", "plain festival"):
        assert name in listed
    for run in hostile.runs.values():
        incomplete = 3 if run == hostile.runs["close"] else 0
        out = shown(cli("log", str(run), cwd=tmp_path, env=hostile.env), incomplete)
        assert str(run) in out and " UTC run started " in out
    closed = shown(cli("log", str(hostile.runs["close"]), cwd=tmp_path, env=hostile.env), 3)
    assert f"{KIND}:[/]\\x1b[2J{SCRIPT}" in closed  # the "left:" line names the entry as typed
    assert f"{CLOSE} {ALERT} \\x1b[31mred{SCRIPT}" in closed
    alerted = shown(cli("log", str(hostile.runs["alert"]), cwd=tmp_path, env=hostile.env))
    assert f"error=screen.fail raised RuntimeError: {CLOSE} {ALERT} \\x1b[31m" in alerted


def test_replay_shows_hostile_values_as_typed_and_its_json_stays_json(
    cli: Cli, hostile: Hostile, tmp_path: Path
) -> None:
    run = str(hostile.runs["close"])
    out = shown(cli("replay", run, cwd=tmp_path, env=hostile.env))
    assert CLOSE in out and f"terminal: {CLOSE} {ALERT}" in out
    assert out.strip().splitlines()[-1] == "run completed; cleanup ⚠ needs a person"
    as_of = shown(
        cli("replay", run, "--as-of", "2030-01-01T00:00:00", cwd=tmp_path, env=hostile.env)
    )
    assert f"{KIND}:[/]\\x1b[2J{SCRIPT}: failing, 1 attempts" in as_of
    found = json.loads(shown(cli("replay", run, "--json", cwd=tmp_path, env=hostile.env)))
    assert found["name"] == CLOSE
    assert any(line["outcome"] == f"terminal: {ERROR}" for line in found["lines"])
    alerted = shown(cli("replay", str(hostile.runs["alert"]), cwd=tmp_path, env=hostile.env))
    assert ALERT in alerted


def test_step_shows_hostile_values_and_the_lease_side_by_side_as_typed(
    cli: Cli, hostile: Hostile, tmp_path: Path
) -> None:
    out = shown(cli("step", str(hostile.entry), cwd=tmp_path, env=hostile.env))
    assert f"{KIND}:[/]\\x1b[2J{SCRIPT} — version 1 of" in out
    assert ALERT in out and "RevertFailed" in out
    sky = shown(cli("step", str(hostile.lease), cwd=tmp_path, env=hostile.env))
    assert "who changed this, and when?" in sky
    assert f"'{ALERT}\\x1b[2J'" in sky and "'[/]\\x1b[31m'" in sky
    assert f"'{SCRIPT}\\x1b[31m'" in sky
    at = shown(
        cli("step", str(hostile.entry), "--at", "1", "--json", cwd=tmp_path, env=hostile.env)
    )
    assert json.loads(at)["name"] == f"{KIND}:{REF}"


def test_the_interactive_step_prompt_shows_hostile_values_escaped(
    hostile: Hostile, tmp_path: Path
) -> None:
    output = in_a_terminal(["step", str(hostile.entry)], "n\nn\nq\n", tmp_path, hostile.env)
    assert "(n)ext (p)revious (j N) jump (q)uit:" in output
    assert ALERT in output and "\\x1b[2J" in output
    assert CLEAR not in output and RED not in output
    assert "Traceback" not in output


def test_runs_limit_refuses_zero_and_negatives_and_has_a_maximum(
    cli: Cli, hostile: Hostile, tmp_path: Path
) -> None:
    for bad in ("0", "-1", "501"):
        done = cli("runs", "--limit", bad, cwd=tmp_path, env=hostile.env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"--limit must be between 1 and 500; {bad} was asked for" in done.stdout
        assert len(done.stdout.strip().splitlines()) == 1
        assert "Traceback" not in done.stdout + done.stderr
    two = shown(cli("runs", "--limit", "2", cwd=tmp_path, env=hostile.env))
    assert "plain festival" in two and SCRIPT in two and CLOSE not in two and ALERT not in two


def test_log_shows_the_last_200_lines_by_default_and_says_how_many_it_left_out(
    cli: Cli, rl: Runledger, store_url: str, tmp_path: Path
) -> None:
    run = rl.runs.start(spec(phase("p1", *(step(f"q{i}", "screen.quiet") for i in range(205)))))
    for _ in range(20):
        if row(rl, run).status != "running":
            break
        tick(rl)
    total = len(rl.queries.log(run))
    assert total > 205
    env = {"RUNLEDGER_DATABASE_URL": store_url}
    out = shown(cli("log", str(run), cwd=tmp_path, env=env))
    assert out.count(" UTC step done ") + out.count(" UTC run ") == 200
    assert f"… {total - 200:,} earlier lines; use --limit or --since" in out
    assert " UTC run completed" in out and " UTC run started" not in out
    three = shown(cli("log", str(run), "--limit", "3", cwd=tmp_path, env=env))
    assert three.count(" UTC step done ") + three.count(" UTC run completed") == 3
    assert f"… {total - 3:,} earlier lines" in three
    for bad in ("0", "-5"):
        refused = cli("log", str(run), "--limit", bad, cwd=tmp_path, env=env)
        assert refused.returncode == 2 and "--limit must be between 1 and" in refused.stdout


def test_log_since_shows_what_happened_since_then_and_refuses_a_bad_time(
    cli: Cli, rl: Runledger, clock: Clock, store_url: str, tmp_path: Path
) -> None:
    run = rl.runs.start(spec(phase("p1", step("q", "screen.quiet"))))
    clock.advance(60)
    tick(rl)
    env = {"RUNLEDGER_DATABASE_URL": store_url}
    out = shown(cli("log", str(run), "--since", "2026-12-02T12:00:30", cwd=tmp_path, env=env))
    assert " UTC step done " in out and " UTC run started " not in out
    assert "… 1 earlier line; use --limit or --since" in out
    everything = shown(
        cli("log", str(run), "--since", "2026-12-02T12:00:00+00:00", cwd=tmp_path, env=env)
    )
    assert " UTC run started " in everything and "earlier line" not in everything
    for bad in ("yesterday", "2026-13-45"):
        done = cli("log", str(run), "--since", bad, cwd=tmp_path, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"--since {bad!r} is not an ISO 8601 time" in done.stdout
        assert len(done.stdout.strip().splitlines()) == 1


def test_the_left_listing_is_bounded_like_the_log(
    cli: Cli, rl: Runledger, store_url: str, tmp_path: Path
) -> None:
    run = rl.runs.start(spec(phase("p1", *(step(f"s{i}", "screen.spawn") for i in range(4)))))
    tick(rl, 2)
    assert row(rl, run).unresolved == 4
    env = {"RUNLEDGER_DATABASE_URL": store_url}
    out = shown(cli("log", str(run), "--limit", "2", cwd=tmp_path, env=env), 3)
    assert out.count("left:") == 2
    assert "… 2 more unresolved entries; use --limit" in out


def test_queries_log_answers_the_last_lines_since_a_time_in_store_order(
    rl: Runledger, clock: Clock
) -> None:
    run = rl.runs.start(
        spec(
            phase("p1", step("a", "screen.quiet")),
            phase("p2", step("b", "screen.quiet"), advance="manual"),
        )
    )
    clock.advance(60)
    tick(rl)
    rl.projector.catch_up()
    every = rl.queries.log(run)
    assert every[0].kind == "run.started" and len(every) >= 3
    assert rl.queries.log(run, limit=2) == every[-2:]
    since = every[0].at.replace(second=30)
    assert rl.queries.log(run, since=since) == every[1:]
    assert rl.queries.log(run, since=since, limit=1) == every[-1:]
    assert rl.queries.log_size(run) == len(every)


def in_a_terminal(args: list[str], keys: str, cwd: Path, env: dict[str, str]) -> str:
    """Run the CLI with a terminal for stdin and stdout, type ``keys``, answer what it wrote."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    environ |= env | {"COLUMNS": "200", "LINES": "50", "TERM": "xterm"}
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [*RUNLEDGER, *args],
        cwd=cwd,
        env=environ,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    os.write(master, keys.encode())
    chunks: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed: the command has exited
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
        returncode = process.wait(timeout=30)
    output = b"".join(chunks).decode("utf-8", "replace")
    assert returncode == 0, output
    return output

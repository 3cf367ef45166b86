"""Every CLI argument an operator types, given hostile text: refused or shown in one sentence,
never a traceback, and every other run still lists. The walk counts tracebacks (goal: none)."""

from __future__ import annotations

import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Queue

import pytest

from runledger.application.cli import exits
from runledger.application.cli.app import run
from tests.entrypoints.test_cli import run_cli
from tests.support.forked_cli import ForkedCli

# An argument cannot carry a NUL; a byte that is not UTF-8 reaches Python as a lone surrogate.
ARGUMENTS = {
    "markup": "[/] oops [bold red]ALERT[/bold red]",
    "terminal escape": "\x1b[2J\x1b[31mred",
    "not UTF-8": "bad\udcff",
    "100 KB": "x" * 100_000,
    "empty": "",
}


def commands(run: str, value: str) -> list[list[str]]:
    return [
        ["cancel", run, "--by", value, "--no-cleanup"],
        ["abort", run, "--reason", value],
        ["advance", run, "--by", value],
        ["cleanup", run, "--by", value],
        ["tick", "--worker", value],
        ["log", value],
        ["replay", run, "--as-of", value],
        ["replay", run, "--entry", value],
        ["step", value],
        ["runs", "--limit", value],
        ["rebuild", value, "--verify"],
        ["sandbox", "set", value, value],
        ["sandbox", "vanish", value],
        ["sandbox", "fault", value, value, value],
        ["reconcile", value, "--by", value],
    ]


@pytest.mark.slow
def test_hostile_arguments_to_every_command_never_end_in_a_traceback(
    tmp_path: Path, store_url: str
) -> None:
    env = {"RUNLEDGER_DATABASE_URL": store_url}
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "name": "kept safe",
                "phases": [
                    {
                        "id": "p",
                        "advance": "manual",
                        "steps": [
                            {"id": "s", "action": "sandbox.spawn", "params": {"kind": "crow"}}
                        ],
                    }
                ],
            }
        )
    )
    started = run_cli("start", str(spec), cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    run = started.stdout.strip().splitlines()[-1]
    walk = [args for value in ARGUMENTS.values() for args in commands(run, value)]
    walk += [["step", str(uuid.uuid4())], ["log", str(uuid.uuid4())]]
    # Each command in a fresh process, forked from one that imported the CLI once: two servers,
    # two commands at a time.
    servers: Queue[ForkedCli] = Queue()
    for n in range(2):
        servers.put(ForkedCli(tmp_path / f"server-{n}", env))

    def attempt(args: list[str]) -> tuple[list[str], int, str]:
        server = servers.get()
        try:
            done = server.run(*args, cwd=tmp_path)
        finally:
            servers.put(server)
        return args, done.returncode, done.stdout + done.stderr

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(attempt, walk))
    finally:
        while not servers.empty():
            servers.get().close()
    tracebacks = [(args[:2], out[-300:]) for args, _, out in results if "Traceback" in out]
    assert tracebacks == [], f"{len(tracebacks)} of {len(walk)} ended in a traceback"
    odd_exits = [(args[:2], code) for args, code, _ in results if code not in (0, 1, 2)]
    assert odd_exits == []
    not_utf8 = [args[:2] for args, _, out in results if "\\xff" in out]
    assert not_utf8 == [], "printed bytes a terminal cannot decode"
    listed = run_cli("runs", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "kept safe" in listed.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["runner", "--interval", "nan"],
        ["runner", "--interval", "-5"],
        ["runner", "--interval", "0"],
        ["runner", "--interval", "inf"],
        ["serve", "--interval", "nan"],
        ["serve", "--interval", "-1"],
        ["serve", "--port", "70000"],
    ],
)
def test_an_interval_or_a_port_no_process_can_keep_is_a_usage_error_before_anything_starts(
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A store that cannot open: a value let through would end in exit 1, not in a runner that
    # ticks without rest (a negative interval) or a traceback (nan).
    monkeypatch.setenv("RUNLEDGER_DATABASE_URL", f"sqlite:///{tmp_path}/no/such/dir/x.sqlite3")
    handlers = list(logging.getLogger().handlers)
    code = run(args)
    said = capsys.readouterr()
    assert code == exits.USAGE, said.out + said.err
    assert said.out.startswith(f"runledger: {args[1]}"), said.out
    assert "Traceback" not in said.out + said.err
    # Refused before the process set up its logging: nothing of it outlives this command.
    assert logging.getLogger().handlers == handlers

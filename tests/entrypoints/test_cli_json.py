"""The CLI on the HTTP API's schemas, on an SQLite file and on PostgreSQL: every command's --json
is the API's answer (validated by the API's own response model), the exit codes say success,
failure, usage and "cleanup incomplete", --help lists them and the environment, and no output
shows a dataclass's repr.

Commands run in-process through ``runledger.application.cli.app.run`` (what ``main`` runs), on
the sandbox world in the test's folder; the few about the process itself run it as one. Each
test runs twice: on the store directly, and through a server (the API served in this process
over the same store, tests/support/remote_cli.py), its --by dropped for a token naming that
person, with the same expectations: a command says the same either way.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

import pytest
import typer
from pydantic import TypeAdapter

from runledger.application.cli import answers, exits
from runledger.application.cli.app import app, run
from runledger.application.cli.console import console
from runledger.application.reading.schemas import fleet, history, runs, tokens
from runledger.application.settings import ENV_NAMES, Settings
from tests.entrypoints.test_cli import RUNLEDGER
from tests.support.remote_cli import Served, without_by

THROUGH_A_SERVER = "through a server on SQLite only (test_cli_remote.py serves PostgreSQL too)"
"""Each test runs through a server on one store, which is what that door changes; twice more
would cost the suite a minute of its eight for no case the server's own tests leave out."""

NO_JSON = {"demo", "runner", "serve"}
"""Exempt: a story told in words, and two long-lived processes whose output is their log."""

REPR = re.compile(r"\b[A-Z]\w*\(\w+=|\{'\w+': ")
"""What a dataclass's, a model's or a dict's repr looks like on a screen."""


@dataclass
class Done:
    code: int
    out: str
    err: str


class Cli(Protocol):
    mode: str
    """``direct`` (the store opened by the command) or ``remote`` (through the API)."""

    def __call__(self, *args: str, code: int = 0) -> Done: ...


@dataclass
class Invoker:
    mode: str
    invoke: Callable[..., Done]

    def __call__(self, *args: str, code: int = 0) -> Done:
        return self.invoke(*args, code=code)


def spec(name: str, kind: str = "crow", advance: str = "auto") -> dict[str, Any]:
    step = {"id": "s", "action": "sandbox.spawn", "params": {"kind": kind, "count": 2}}
    return {"name": name, "phases": [{"id": "p", "advance": advance, "steps": [step]}]}


@pytest.fixture(name="cli", params=["direct", "remote"])
def cli_fixture(
    request: pytest.FixtureRequest,
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Cli]:
    """Run a command in-process on the test's store and sandbox world (directly, or through a
    server over them): its exit code and output."""
    if request.param == "remote" and not store_url.startswith("sqlite"):
        pytest.skip(THROUGH_A_SERVER)
    for name in [n for n in os.environ if n.startswith("RUNLEDGER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no one's saved context
    monkeypatch.setenv("RUNLEDGER_DATABASE_URL", store_url)
    monkeypatch.setenv("RUNLEDGER_SANDBOX_PATH", str(tmp_path / "sandbox.sqlite3"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(console, "width", 200)  # as wide as the subprocess tests' COLUMNS
    shown: list[str] = []
    served = Served(Settings.from_env()) if request.param == "remote" else None

    def invoke(*args: str, code: int = 0) -> Done:
        said_args = list(args)
        if served is not None:
            said_args, person = without_by(args)
            for name, value in served.env(person).items():
                monkeypatch.setenv(name, value)
        capsys.readouterr()
        found = run(said_args)
        said = capsys.readouterr()
        done = Done(int(found or 0), said.out, said.err)
        assert done.code == code, (args, done)
        assert "Traceback" not in done.out + done.err, (args, done)
        if "--json" not in args:
            shown.append(done.out + done.err)
        return done

    try:
        yield Invoker(request.param, invoke)
    finally:
        if served is not None:
            served.close()
    reprs = [out for out in shown if REPR.search(out.replace("\n", " "))]
    assert reprs == [], "a command printed a repr"


def start(cli: Cli, tmp_path: Path, document: dict[str, Any]) -> UUID:
    path = tmp_path / f"{document['name']}.json"
    path.write_text(json.dumps(document))
    return UUID(cli("start", str(path)).out.strip())


def ended_incomplete(cli: Cli, tmp_path: Path, name: str) -> UUID:
    """A run whose reverts the sandbox refuses for good: it ends with its cleanup incomplete."""
    cli("sandbox", "fault", "sandbox.spawn", "terminal")
    run_id = start(cli, tmp_path, spec(name))
    cli("tick")
    cli("sandbox", "fault", "sandbox.spawn", "terminal", "false")
    return run_id


def parsed(model: Any, done: Done) -> Any:
    return TypeAdapter(model).validate_json(done.out)


def test_every_command_but_the_exempt_takes_json() -> None:
    missing = []

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "commands"):  # a group (Typer may carry its own copy of click)
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}".strip())
        elif path not in NO_JSON and "--json" not in {o for p in command.params for o in p.opts}:
            missing.append(path)

    walk(typer.main.get_command(app), "")
    assert missing == []


def test_reading_commands_print_the_api_s_answers(cli: Cli, tmp_path: Path) -> None:
    assert parsed(answers.Ready, cli("init", "--json")).store
    broken = ended_incomplete(cli, tmp_path, "broken")
    fine = start(cli, tmp_path, spec("fine"))
    ticked = parsed(answers.Tick, cli("tick", "--json", "--worker", "w-json"))
    assert ticked.worker == "w-json" and ticked.advance.completed == 1
    assert [(s.run_id, s.cleanup_status) for s in ticked.swept] == [(fine, "complete")]
    page = parsed(runs.RunPage, cli("runs", "--json"))
    assert [r.run_id for r in page.items] == [fine, broken]  # newest first, as the API lists
    shown = parsed(answers.RunLog, cli("log", str(broken), "--json", code=exits.CLEANUP_INCOMPLETE))
    assert shown.run.run.cleanup_status == "incomplete" and shown.log.total == len(shown.log.lines)
    assert "failing" in {g.state for g in shown.run.entries}
    assert parsed(answers.RunLog, cli("log", str(fine), "--json")).run.run.status == "completed"
    lines = parsed(answers.RunLog, cli("log", str(fine), "--json", "--limit", "1")).log
    assert len(lines.lines) == 1 and lines.earlier == lines.lines[0].position
    replayed = parsed(history.Replay, cli("replay", str(broken), "--json"))
    assert replayed.cleanup_status == "incomplete" and replayed.lines
    entry = next(g.entries[0] for g in shown.run.entries if g.state == "failing")
    stepped = parsed(history.EntryHistory, cli("step", str(entry.entry_id), "--json"))
    assert stepped.entry_id == entry.entry_id and len(stepped.frames) == stepped.total
    one = parsed(history.EntryHistory, cli("step", entry.ref, "--at", "1", "--json"))
    assert [f.version for f in one.frames] == [1]
    [module] = parsed(list[fleet.Module], cli("modules", "--json"))
    assert (module.name, module.status) == ("sandbox", "loaded")
    ran = parsed(list[fleet.Runner], cli("runners", "--json"))
    assert {r.worker for r in ran} >= {"w-json"}
    views = parsed(list[fleet.Projection], cli("projections", "--json"))
    assert views and all(v.lag == 0 and v.stuck_at is None for v in views)
    verified = parsed(answers.Rebuilt, cli("rebuild", "--verify", "--json"))
    assert verified.verified and verified.differences == []
    assert parsed(answers.Rebuilt, cli("rebuild", "runs", "--json")).views == ["runs"]


def test_runs_takes_the_api_s_filters_and_pages_with_its_cursor(cli: Cli, tmp_path: Path) -> None:
    broken = ended_incomplete(cli, tmp_path, "broken festival")
    held = start(cli, tmp_path, spec("held parade", advance="manual"))
    cli("tick")
    both = [held, broken]

    def listed(*args: str) -> list[UUID]:
        return [r.run_id for r in parsed(runs.RunPage, cli("runs", "--json", *args)).items]

    assert listed() == both
    assert listed("--status", "running") == [held]
    assert listed("--cleanup-status", "incomplete") == [broken]
    assert listed("--name", "FESTIVAL") == [broken]
    first = parsed(runs.RunPage, cli("runs", "--json", "--limit", "1"))
    assert [r.run_id for r in first.items] == [held] and first.next_cursor
    assert listed("--limit", "1", "--cursor", first.next_cursor) == [broken]
    table = cli("runs").out
    for run_id in both:
        assert str(run_id) in table
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", table)
    assert "No runs match." in cli("runs", "--status", "cancelled").out
    cli("runs", "--status", "tidy", code=exits.USAGE)
    refused = cli("runs", "--cursor", "nonsense", code=exits.USAGE)
    assert "--cursor 'nonsense' is not a cursor" in refused.out


def test_acting_commands_print_the_api_s_answers(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "held.json"
    path.write_text(json.dumps(spec("held", advance="manual")))
    detail = parsed(runs.RunDetail, cli("start", str(path), "--json"))
    assert detail.run.status == "running" and detail.phases
    cli("tick")
    advanced = parsed(
        runs.Advanced, cli("advance", str(detail.run.run_id), "--by", "bea", "--json")
    )
    assert advanced.run_id == detail.run.run_id and advanced.message
    kept = start(cli, tmp_path, spec("kept", advance="manual"))
    cli("tick")
    cancelled = cli("cancel", str(kept), "--by", "alice", "--no-cleanup", "--json")
    found = parsed(runs.RunDetail, cancelled)
    assert (found.run.status, found.run.ended_by) == ("cancelled", "alice")
    [kept_entries] = [g.entries for g in found.entries if g.state == "kept"]
    assert len(kept_entries) == 2 and {e.kept_by for e in kept_entries} == {"alice"}
    stopped = start(cli, tmp_path, spec("stopped", advance="manual"))
    aborted = parsed(runs.RunDetail, cli("abort", str(stopped), "--reason", "why", "--json"))
    assert (aborted.run.status, aborted.run.end_reason) == ("aborted", "why")
    again = parsed(runs.CleanupSummary, cli("cleanup", str(kept), "--by", "ops", "--json"))
    assert (again.by, again.cleanup_status) == ("ops", "complete")


def test_token_and_sandbox_commands_print_json(cli: Cli) -> None:
    issued = parsed(tokens.IssuedToken, cli("token", "create", "vera", "--json"))
    assert issued.secret and issued.role == "viewer"
    # Through a server, the token the command speaks with is listed too.
    listed = {t.token_id: t for t in parsed(list[tokens.Token], cli("token", "list", "--json"))}
    assert listed[issued.token_id].revoked_at is None
    revoked = parsed(tokens.Token, cli("token", "revoke", str(issued.token_id), "--json"))
    assert revoked.revoked_at is not None
    changed = parsed(answers.Changed, cli("sandbox", "set", "weather:north", "hail", "--json"))
    assert (changed.target, changed.value) == ("weather:north", "hail")
    world = parsed(answers.World, cli("sandbox", "show", "--json"))
    assert world.weather["north"] == "hail" and world.things == []
    fault = cli("sandbox", "fault", "sandbox.spawn", "fail_revert", "2", "--json")
    assert parsed(answers.Changed, fault).value == 2
    assert parsed(answers.Changed, cli("sandbox", "vanish", "nothing", "--json")).done is False
    assert parsed(answers.Changed, cli("sandbox", "restart", "--json")).change == "restart"
    refused = cli("sandbox", "fault", "sandbox.spawn", "explode", code=exits.USAGE)
    assert "unknown fault 'explode'" in refused.out


def test_reconcile_asks_the_module_in_the_asker_s_name(cli: Cli, tmp_path: Path) -> None:
    run_id = start(cli, tmp_path, spec("held", advance="manual"))
    cli("tick")
    things = parsed(answers.World, cli("sandbox", "show", "--json")).things
    gone = things[0].ref
    cli("sandbox", "vanish", gone)
    said = cli("reconcile", "sandbox", "--by", "ops").out
    assert "asked about 2, 1 in force, 1 orphaned, 0 expired" in said
    again = parsed(fleet.Reconciled, cli("reconcile", "sandbox", "--by", "ops", "--json"))
    assert (again.asked, again.in_force, again.orphaned) == (1, 1, 0)
    log = cli("log", str(run_id)).out
    assert "found gone early" in log and "asked by=ops" in log and "resource." not in log
    missing = cli("reconcile", "nowhere", "--by", "ops", code=exits.FAILED).out
    assert "no module named 'nowhere' is loaded" in missing
    refused = cli("reconcile", "sandbox", "--by", " ", code=exits.USAGE)
    assert "--by: must name the person who asks; it is empty" in refused.out


def test_a_narrow_terminal_lists_runs_and_runners_without_folding_an_id(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = start(cli, tmp_path, spec("a run with a rather long name to fit"))
    cli("tick", "--worker", "w-narrow")
    monkeypatch.setattr(console, "width", 80)
    listed = cli("runs").out.splitlines()
    assert listed[0] == f"{run_id}  " + listed[0].split("  ")[1]
    assert listed[1].strip() == "a run with a rather long name to fit"
    assert "completed · cleanup ✓ nothing left — 2 given back" in listed[2]
    runners = cli("runners").out
    assert "w-narrow  stopped" in runners and "actions: sandbox.spawn, sandbox.zone" in runners
    assert max(len(line) for line in [*listed, *runners.splitlines()]) <= 80


def test_exit_codes_say_success_failure_usage_and_cleanup_incomplete(
    cli: Cli, tmp_path: Path
) -> None:
    broken = ended_incomplete(cli, tmp_path, "broken")
    held = start(cli, tmp_path, spec("held", advance="manual"))
    assert "no run" in cli("log", "00000000-0000-0000-0000-000000000000", code=exits.FAILED).out
    assert "still running" in cli("cleanup", str(held), "--by", "ops", code=exits.FAILED).out
    cli("runs", "--limit", "0", code=exits.USAGE)
    cli("runs", "--no-such-option", code=exits.USAGE)
    cli("log", str(broken), "--since", "yesterday", code=exits.USAGE)
    cli("log", str(broken), code=exits.CLEANUP_INCOMPLETE)
    cli("sandbox", "fault", "sandbox.spawn", "terminal")  # still down when asked again
    said = cli("cleanup", str(broken), "--by", "ops", code=exits.CLEANUP_INCOMPLETE).out
    assert f"cleanup of {broken}: attempted 2, reverted 0" in said
    assert "cleanup ⚠ needs a person" in said
    cli("sandbox", "fault", "sandbox.spawn", "terminal", "false")
    mended = cli("cleanup", str(broken), "--by", "ops").out
    assert "reverted 2" in mended and "cleanup ✓ nothing left" in mended
    cli("log", str(broken))
    cli("cleanup", str(broken), "--by", "x", "--plan", code=exits.USAGE)
    if cli.mode == "direct":  # through a server the token names who asks
        cli("cleanup", str(broken), code=exits.USAGE)


def test_tick_says_what_it_did_in_words(cli: Cli, tmp_path: Path) -> None:
    cli("sandbox", "fault", "sandbox.spawn", "terminal")
    run_id = start(cli, tmp_path, spec("broken"))
    said = cli("tick").out.replace("\n", " ")
    assert "1 run looked at, 1 step dispatched (1 done, 0 failed)" in said
    assert "1 run completed, 0 aborted" in said
    assert f"cleanup {run_id}: attempted 2, reverted 0, drifted 0, failed 2" in said
    assert "Report(" not in said and "Summary(" not in said


@pytest.mark.parametrize("cli", ["direct"], indirect=True)
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_help_lists_the_exit_codes_and_the_environment(cli: Cli) -> None:
    top = cli("--help").out
    for code, meaning in ((0, "success"), (1, "failure"), (2, "usage"), (3, "incomplete")):
        assert re.search(rf"\b{code}  [^\n]*{meaning}", top), (code, top)
    for name in (*ENV_NAMES.values(), "RUNLEDGER_LOG_FORMAT", "RUNLEDGER_<MODULE>_*"):
        assert name in top
    for command in ("log", "cleanup"):
        assert "3  cleanup incomplete" in cli(command, "--help").out
    for words in (["runs"], ["tick"], ["token", "list"], ["sandbox", "show"]):
        shown = cli(*words, "--help").out
        assert "Exit codes" in shown and "1  failure" in shown and "3  " not in shown


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_shell_completion_is_there_and_completes(store_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    shown = subprocess.run(
        [*RUNLEDGER, "--show-completion", "bash"],
        env={**env, "SHELL": "/bin/bash"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "_runledger_completion" in shown.stdout and "complete " in shown.stdout
    asked = {"_RUNLEDGER_COMPLETE": "complete_bash", "COMP_CWORD": "3"}
    words = "runledger cleanup --where cleanup=i"
    completed = subprocess.run(
        RUNLEDGER,
        env={**env, **asked, "COMP_WORDS": words},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.stdout.split() == ["cleanup=incomplete"], completed.stdout + completed.stderr


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_the_runner_logs_one_json_object_per_line_when_asked(
    store_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    env |= {
        "RUNLEDGER_DATABASE_URL": store_url,
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
        "RUNLEDGER_LOG_FORMAT": "json",
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec("logged")))
    started = subprocess.run(
        [*RUNLEDGER, "start", "spec.json"], cwd=tmp_path, env=env, capture_output=True, timeout=60
    )
    assert started.returncode == 0, started.stdout + started.stderr
    runner = subprocess.Popen(
        [*RUNLEDGER, "runner", "--interval", "0.1", "--worker", "logged"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = threading.Timer(60, runner.terminate)  # a runner that never logs ends the wait
    deadline.start()
    try:
        assert runner.stderr is not None
        lines = []
        for line in runner.stderr:  # ends when the runner does
            lines.append(json.loads(line))  # every line is one JSON object
            if lines[-1].get("event") == "runner.tick":
                break
        ticked = lines[-1]
        assert (ticked["event"], ticked["completed"], ticked["given_back"]) == ("runner.tick", 1, 2)
    finally:
        deadline.cancel()
        runner.terminate()
        runner.wait(timeout=30)


@pytest.mark.parametrize("cli", ["direct"], indirect=True)  # it names the store's own trouble
def test_with_json_a_refusal_is_json_on_stdout_as_the_api_says_it_and_keeps_its_exit_code(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = cli("runs", "--limit", "0", "--json", code=exits.USAGE)
    assert json.loads(usage.out) == {"detail": "--limit must be between 1 and 500; 0 was asked for"}
    unknown = cli("log", "00000000-0000-0000-0000-000000000000", "--json", code=exits.FAILED)
    assert set(json.loads(unknown.out)) == {"detail"}
    # The next command without --json says it in words again: the mode is per command.
    plain = cli("runs", "--limit", "0", code=exits.USAGE)
    assert plain.out.startswith("runledger: --limit must be between 1 and 500")
    monkeypatch.setenv("RUNLEDGER_DATABASE_URL", f"sqlite:///{tmp_path}/no/such/dir/x.sqlite3")
    away = cli("runs", "--json", code=exits.FAILED)
    assert json.loads(away.out)["detail"].startswith("the SQLite file")
    assert "does not exist: run `runledger init`" in json.loads(away.out)["detail"]

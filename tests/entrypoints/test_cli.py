from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import typer

from runledger.application.cli.app import app
from runledger.application.cli.demo_specs import FESTIVAL, PARADE
from tests.conftest import Cli
from tests.support.forked_cli import NO_CONFIG

RUNLEDGER = [sys.executable, "-c", "from runledger.application.cli.app import main; main()"]


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    environ["XDG_CONFIG_HOME"] = NO_CONFIG  # no context a login on this machine saved
    environ.update(env or {})
    environ["COLUMNS"] = "200"
    return subprocess.run(
        [*RUNLEDGER, *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        errors="backslashreplace",  # bytes that are not UTF-8 stay visible to the assertions
    )


def assert_the_demo_story(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Phase gather: steps done, waiting for a person to advance it" in out
    assert " UTC expired " in out and "zone:arena" in out
    assert " UTC kept " in out and "by=alice" in out
    assert 'the value is now "storm"' in out
    assert "step ring failed 3 times" in out
    assert "attempted 2, reverted 2, remaining 0" in out
    assert "North weather: storm" in out
    assert "Traceback" not in out + done.stderr


def statuses(cli: Cli, folder: Path) -> list[tuple[str, str]]:
    """(name, status) of every run ``runs`` lists, newest first."""
    listed = cli("runs", "--limit", "100", cwd=folder)
    assert listed.returncode == 0, listed.stdout
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in listed.stdout.splitlines()
        if line.startswith("│")
    ]
    return [(cells[0], cells[1]) for cells in rows if len(cells) > 1]


DEMO_RUNS = ("Harvest festival", "Night market", "Parade", "Duel at dusk")
DEMO_ENDS = [
    ("Harvest festival", "completed"),
    ("Night market", "completed"),
    ("Parade", "cancelled"),
    ("Duel at dusk", "aborted"),
]


@pytest.mark.slow
def test_the_demo_gives_back_what_it_can_and_shows_what_needs_a_person(
    cli: Cli, tmp_path: Path
) -> None:
    done = cli("demo", cwd=tmp_path)
    assert_the_demo_story(done)
    assert (tmp_path / "runledger.sqlite3").exists()
    assert (tmp_path / "sandbox.sqlite3").exists()
    assert sorted(statuses(cli, tmp_path)) == sorted(DEMO_ENDS)


def story(out: str) -> str:
    """The demo's output without what differs between runs: ids, tags and times."""
    out = re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "ID", out)
    out = re.sub(r"-[0-9a-f]{8}-", "-TAG-", out)
    return re.sub(r"\d\d:\d\d:\d\d", "TIME", out)


@pytest.mark.slow
def test_the_demo_run_twice_in_one_folder_tells_the_same_story_and_leaves_nothing_running(
    cli: Cli,
    tmp_path: Path,
) -> None:
    first, second = cli("demo", cwd=tmp_path), cli("demo", cwd=tmp_path)
    assert_the_demo_story(first)
    assert_the_demo_story(second)
    # The same lines, give or take the order of entries recorded in one save.
    assert sorted(story(second.stdout).splitlines()) == sorted(story(first.stdout).splitlines())
    assert sorted(statuses(cli, tmp_path)) == sorted(DEMO_ENDS * 2)
    assert "Left in the world: float-" in second.stdout
    [left] = [line for line in second.stdout.splitlines() if line.startswith("Left in the world")]
    assert left.count("float-") == 3  # this demo's floats, not the earlier one's too


def start_spec(cli: Cli, folder: Path, document: dict[str, Any]) -> str:
    (folder / "spec.json").write_text(json.dumps(document))
    started = cli("start", "spec.json", cwd=folder)
    assert started.returncode == 0, started.stdout
    return started.stdout.strip()


@pytest.mark.slow
def test_the_demo_first_ends_what_an_earlier_demo_left_running(cli: Cli, tmp_path: Path) -> None:
    # What a demo that stopped half-way leaves: its festival holding the north, its parade going.
    assert cli("init", cwd=tmp_path).returncode == 0
    for document in (FESTIVAL, PARADE):
        start_spec(cli, tmp_path, document)
    assert cli("tick", cwd=tmp_path).returncode == 0
    done = cli("demo", cwd=tmp_path)
    assert_the_demo_story(done)
    assert "An earlier demo stopped before its end: 2 runs it left running" in done.stdout
    ends = statuses(cli, tmp_path)
    assert ("Harvest festival", "aborted") in ends and ("Parade", "aborted") in ends
    assert "running" not in {status for _, status in ends}


@pytest.mark.slow
def test_the_demo_says_why_when_somebody_else_holds_the_north_and_leaves_nothing_running(
    cli: Cli,
    tmp_path: Path,
) -> None:
    assert cli("init", cwd=tmp_path).returncode == 0
    mine = start_spec(
        cli,
        tmp_path,
        {
            "name": "my storm",
            "phases": [
                {
                    "id": "hold",
                    "advance": "manual",
                    "steps": [
                        {
                            "id": "storm",
                            "action": "core.lease",
                            "params": {
                                "lease": "sandbox.weather",
                                "target": "north",
                                "value": "hail",
                                "duration_s": 3600,
                            },
                        }
                    ],
                }
            ],
        },
    )
    assert cli("tick", cwd=tmp_path).returncode == 0
    done = cli("demo", cwd=tmp_path)
    # A start checks what a dry run checks: the festival's fog-north asks for the north, which
    # my storm holds now, so the demo starts nothing and says why (exit 1, a refusal).
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert (
        f"phases.0.steps.2.params.target: 'north' (sandbox.weather) is held by run {mine}"
        in done.stdout
    )
    assert statuses(cli, tmp_path) == [("my storm", "running")]


def test_commands_on_a_store_that_was_never_initialised_say_so_in_one_line(
    cli: Cli,
    tmp_path: Path,
) -> None:
    done = cli("runs", cwd=tmp_path)
    assert done.returncode == 1
    assert "runledger.sqlite3 does not exist: run `runledger init`" in done.stdout
    assert list(tmp_path.iterdir()) == []  # and no empty file left behind
    assert "Traceback" not in done.stdout + done.stderr


def test_a_wrong_url_is_one_sentence_and_exit_code_1(cli: Cli, tmp_path: Path) -> None:
    done = cli("init", cwd=tmp_path, env={"RUNLEDGER_DATABASE_URL": "mysql://x/y"})
    assert done.returncode == 1
    assert "is not understood" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_init_then_runs_on_an_empty_store(cli: Cli, tmp_path: Path) -> None:
    assert cli("init", cwd=tmp_path).returncode == 0
    assert cli("init", cwd=tmp_path).returncode == 0
    listed = cli("runs", cwd=tmp_path)
    assert listed.returncode == 0 and "No runs yet." in listed.stdout
    missing = cli("log", str(uuid.uuid4()), cwd=tmp_path)
    assert missing.returncode == 1 and "no run" in missing.stdout


def test_every_command_is_listed_in_whole_sentences_not_cut_where_its_source_wrapped() -> None:
    cut = []

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}".strip())
        listed = (command.short_help or command.help or "").split("\n\n")[0]
        if "\n" in listed:
            cut.append(path)

    walk(typer.main.get_command(app), "")
    assert cut == []

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

RUNLEDGER = [sys.executable, "-c", "from application.cli import main; main()"]


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    environ.update(env or {})
    environ["COLUMNS"] = "200"
    return subprocess.run(
        [*RUNLEDGER, *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120,
        errors="backslashreplace",  # bytes that are not UTF-8 stay visible to the assertions
    )


@pytest.mark.slow
def test_the_demo_gives_back_what_it_can_and_shows_what_needs_a_person(tmp_path: Path) -> None:
    done = run_cli("demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runledger.sqlite3").exists()
    out = done.stdout
    assert (tmp_path / "sandbox.sqlite3").exists()
    assert "Phase gather: steps done, waiting for a person to advance it" in out
    assert "resource.expired" in out and "zone:arena" in out
    assert "cleanup.kept" in out and "by=alice" in out
    assert 'the value is now "storm"' in out
    assert "step ring failed 3 times" in out
    assert "attempted 2, reverted 2, remaining 0" in out
    assert "North weather: storm" in out
    assert "Traceback" not in out + done.stderr
    listed = run_cli("runs", cwd=tmp_path)
    assert listed.returncode == 0
    for name in ("Harvest festival", "Night market", "Parade", "Duel at dusk"):
        assert name in listed.stdout


def test_commands_on_a_store_that_was_never_initialised_say_so_in_one_line(
    tmp_path: Path,
) -> None:
    done = run_cli("runs", cwd=tmp_path)
    assert done.returncode == 2
    assert "run `runledger init` first" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_wrong_url_is_one_sentence_and_exit_code_2(tmp_path: Path) -> None:
    done = run_cli("init", cwd=tmp_path, env={"RUNLEDGER_DATABASE_URL": "mysql://x/y"})
    assert done.returncode == 2
    assert "is not understood" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_init_then_runs_on_an_empty_store(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).returncode == 0
    assert run_cli("init", cwd=tmp_path).returncode == 0
    listed = run_cli("runs", cwd=tmp_path)
    assert listed.returncode == 0 and "No runs yet." in listed.stdout
    missing = run_cli("log", str(uuid.uuid4()), cwd=tmp_path)
    assert missing.returncode == 2 and "no run" in missing.stdout

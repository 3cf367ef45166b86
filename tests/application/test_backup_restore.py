"""The backup and restore of OPERATING.md ("Backup and restore"), run as written: its shell block
is read from the page and run with bash, so the page cannot drift from what works. A dump of the
events table alone, restored into an empty database, then `init` and `rebuild`, gives the same
runs, and the restored store goes on taking new ones."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from tests.support.playing import SPAWN, ended_run, makes, play, start
from tests.support.world import World

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # bash, pg_dump and the CLI run as processes
OPERATING = Path(__file__).parents[2] / "OPERATING.md"
MARK = "<!-- tests/application/test_backup_restore.py runs this block as written -->"
BIN = Path(sys.executable).parent  # where pip put the `runledger` command


def procedure() -> str:
    """The shell block OPERATING.md marks as the one this test runs."""
    text = OPERATING.read_text()
    assert MARK in text, "OPERATING.md lost the backup and restore block this test runs"
    found = re.match(r"\s*```sh\n(.*?)```", text.split(MARK, 1)[1], re.S)
    assert found, "the marked block is not a sh code block"
    return found.group(1)


@pytest.fixture
def new_db(pg_admin: str) -> Iterator[str]:
    """An empty database on the same server, dropped at the end."""
    name = f"rl_restore_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield pg_admin.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(pg_admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def runledger(url: str, *args: str, cwd: Path) -> Any:
    """What ``runledger ARGS --json`` prints, on the store at ``url``."""
    env = {**os.environ, "RUNLEDGER_DATABASE_URL": url, "PATH": f"{BIN}:{os.environ['PATH']}"}
    env["RUNLEDGER_SANDBOX_PATH"] = str(cwd / "sandbox.sqlite3")
    done = subprocess.run(
        ["runledger", *args, "--json"], env=env, cwd=cwd, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def world() -> Registry:
    registry = Registry()
    World().install(registry, SPAWN)
    return registry


def history(url: str) -> None:
    """Runs of every kind: one given back, one still running, one started and waiting."""
    with bootstrap(Settings(database_url=url, retry_delays_s=(0.0,)), world()) as rl:
        ended_run(rl, ["imp", "elf"], name="given back")
        rl.cleanup.sweep("backup-test")
        play(rl, makes("spawn", "orc"), name="still running")
        start(rl, makes("spawn", "troll"), name="waiting")


def test_the_backup_and_restore_of_operating_md_gives_the_same_runs(
    pg_url: str, new_db: str, pg_admin: str, tmp_path: Path
) -> None:
    history(pg_url)
    before = runledger(pg_url, "runs", cwd=tmp_path)
    assert len(before["items"]) == 3
    db, schema = pg_url.split("?schema=")
    env = {
        **os.environ,
        "DB": db,
        "NEW_DB": new_db,
        "SCHEMA": schema,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "RUNLEDGER_SANDBOX_PATH": str(tmp_path / "sandbox.sqlite3"),
    }
    env.pop("RUNLEDGER_DATABASE_URL", None)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", procedure()],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert json.loads((tmp_path / "restored-runs.json").read_text()) == before

    restored = f"{new_db}?schema={schema}"
    verified = runledger(restored, "rebuild", "--verify", cwd=tmp_path)
    assert verified["differences"] == [], verified
    with bootstrap(Settings(database_url=restored), world()) as rl:
        start(rl, makes("spawn", "ent"), name="after")  # numbered after the restored events
    after = runledger(restored, "runs", cwd=tmp_path)
    assert len(after["items"]) == 4
    assert after["items"][1:] == before["items"]


def test_the_procedure_stops_at_the_first_failure_rather_than_restore_over_a_store(
    pg_url: str, tmp_path: Path
) -> None:
    """Restoring into the source's own database fails at its first step (the schema is there),
    and bash -e stops: nothing is restored over a live store."""
    history(pg_url)
    db, schema = pg_url.split("?schema=")
    env = {**os.environ, "DB": db, "NEW_DB": db, "SCHEMA": schema}
    env["PATH"] = f"{BIN}:{os.environ['PATH']}"
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", procedure()],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=180,
    )
    assert done.returncode != 0
    assert "already exists" in done.stderr.decode()
    assert not (tmp_path / "restored-runs.json").exists()
    assert len(runledger(pg_url, "runs", cwd=tmp_path)["items"]) == 3

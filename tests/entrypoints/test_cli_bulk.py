"""Cleanup after an outage from the command line, on an SQLite file and on PostgreSQL: a plan
names the runs, their entries and what each would be asked, and writes nothing; applying a plan
whose selection has changed since is refused (exit 1, one sentence) and retries nothing;
applying a fresh one retries exactly the planned runs, in the named person's name."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.cli import exits
from runledger.application.modules.protocol import Registry
from runledger.application.reading.schemas.bulk import Applied, Plan
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from tests.entrypoints.test_cli_json import (
    Cli,
    cli_fixture,  # noqa: F401  (a fixture)
    ended_incomplete,
    parsed,
    start,
)
from tests.support.reading import status, written

INCOMPLETE = ["--where", "module=sandbox", "--where", "cleanup=incomplete"]


@pytest.fixture
def ledger(store_url: str) -> Iterator[Runledger]:
    """The test's store, read directly (no modules loaded)."""
    with bootstrap(Settings(database_url=store_url), Registry()) as rl:
        yield rl


def retries(rl: Runledger, run: UUID) -> list[dict[str, object]]:
    rl.projector.catch_up()
    return [line.detail for line in rl.queries.log(run) if line.kind == "cleanup.retry"]


def test_a_plan_names_the_runs_entries_and_asks_and_writes_nothing(
    cli: Cli, tmp_path: Path, ledger: Runledger
) -> None:
    runs = [ended_incomplete(cli, tmp_path, name) for name in ("north", "south")]
    before = written(ledger)
    found = parsed(Plan, cli("cleanup", *INCOMPLETE, "--plan", "--json"))
    assert written(ledger) == before
    assert [r.run_id for r in found.runs] == runs and found.entries == 4
    assert (found.where.module, found.where.cleanup_status) == ("sandbox", "incomplete")
    for run in found.runs:
        assert (run.status, run.cleanup_status) == ("completed", "incomplete")
        for entry in run.entries:
            assert entry.state == "failing" and entry.last_error
            assert entry.ask == f"sandbox.spawn: revert {entry.name}"
    said = cli("cleanup", *INCOMPLETE, "--plan").out
    assert written(ledger) == before
    assert f"Plan {found.fingerprint}: 2 runs, 4 entries to retry" in said
    for run in found.runs:
        assert str(run.run_id) in said
        for entry in run.entries:
            assert entry.name in said and f"would ask: {entry.ask}" in said
    by = " --by NAME" if cli.mode == "direct" else ""  # through a server the token names who
    command = f"runledger cleanup {' '.join(INCOMPLETE)} --apply {found.fingerprint}{by}"
    assert command in said


def test_a_fresh_plan_retries_exactly_its_runs_in_the_named_person_s_name(
    cli: Cli, tmp_path: Path, ledger: Runledger
) -> None:
    earlier = ended_incomplete(cli, tmp_path, "earlier")
    time.sleep(0.05)
    since = datetime.now(UTC).isoformat()
    later = [ended_incomplete(cli, tmp_path, name) for name in ("later-1", "later-2")]
    window = [*INCOMPLETE, "--where", f"ended_after={since}"]
    found = parsed(Plan, cli("cleanup", *window, "--plan", "--json"))
    assert [r.run_id for r in found.runs] == later
    done = cli("cleanup", *window, "--apply", found.fingerprint, "--by", "alice", "--json")
    applied = parsed(Applied, done)
    assert applied.fingerprint == found.fingerprint
    assert [s.run_id for s in applied.runs] == later
    for summary in applied.runs:
        assert (summary.by, summary.reverted, summary.remaining) == ("alice", 2, 0)
        assert summary.cleanup_status == "complete"
    for run in later:
        assert retries(ledger, run) == [{"by": "alice", "resources": 2}]
    assert retries(ledger, earlier) == []
    assert status(ledger, earlier) == "incomplete"


def test_applying_a_stale_plan_is_refused_in_one_sentence_and_retries_nothing(
    cli: Cli, tmp_path: Path, ledger: Runledger
) -> None:
    first = ended_incomplete(cli, tmp_path, "first")
    found = parsed(Plan, cli("cleanup", *INCOMPLETE, "--plan", "--json"))
    ended_incomplete(cli, tmp_path, "late")  # the selection changes after the plan
    before = written(ledger)
    refused = cli(
        "cleanup", *INCOMPLETE, "--apply", found.fingerprint, "--by", "alice", code=exits.FAILED
    )
    assert written(ledger) == before and retries(ledger, first) == []
    assert refused.out.startswith("runledger: ") and "stale" in refused.out
    assert len(refused.out.strip().splitlines()) == 1


def test_an_applied_plan_whose_runs_stay_incomplete_exits_3(cli: Cli, tmp_path: Path) -> None:
    ended_incomplete(cli, tmp_path, "broken")
    cli("sandbox", "fault", "sandbox.spawn", "terminal")  # the shard is still down
    found = parsed(Plan, cli("cleanup", *INCOMPLETE, "--plan", "--json"))
    said = cli(
        "cleanup",
        *INCOMPLETE,
        "--apply",
        found.fingerprint,
        "--by",
        "ops",
        code=exits.CLEANUP_INCOMPLETE,
    ).out
    assert f"Applied plan {found.fingerprint}: 1 run asked again" in said
    assert "failed 2; 2 remaining (by ops); cleanup ⚠ needs a person" in said


def fog(name: str) -> dict[str, Any]:
    """A run that leases the sandbox's north weather to fog, then waits for a person."""
    params = {"lease": "sandbox.weather", "target": "north", "value": "fog", "duration_s": 3600}
    lease = {"id": "weather", "action": "core.lease", "params": params}
    return {"name": name, "phases": [{"id": "p", "advance": "manual", "steps": [lease]}]}


def test_a_lease_another_live_run_holds_is_shown_left_alone_before_and_after_the_retry(
    cli: Cli, tmp_path: Path
) -> None:
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")
    first = start(cli, tmp_path, fog("first"))
    cli("tick")
    cli("sandbox", "set", "weather:north", "storm")  # a game master
    cli("advance", str(first), "--by", "alice")
    cli("tick")
    assert world.value("weather:north") == "storm"
    second = start(cli, tmp_path, fog("second"))
    cli("tick")
    assert world.value("weather:north") == "fog"
    where = ["--where", "module=sandbox"]
    found = parsed(Plan, cli("cleanup", *where, "--plan", "--json"))
    [entry] = found.runs[0].entries
    assert entry.held is not None and entry.held.holder == second
    held = entry.held.said
    assert held.startswith(f"north is held by run {second} until ") and held.endswith(
        " UTC: not restored"
    )
    said = cli("cleanup", *where, "--plan").out
    assert "1 run, 1 entry to retry (1 not restored: another live run holds the target)" in said
    assert f"would ask: nothing ({held})" in said
    retried = cli("cleanup", str(first), "--by", "ops", code=exits.CLEANUP_INCOMPLETE).out
    assert f"left alone: override:sandbox.weather#north: {held}" in retried
    assert world.value("weather:north") == "fog"  # the second run's override stands
    cli("advance", str(second), "--by", "alice")
    cli("tick")
    assert world.value("weather:north") == "storm"  # its restore put back what it found


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_wrong_where_is_a_usage_error_naming_its_key(cli: Cli) -> None:
    for where, named in (
        ("modul=sandbox", "--where 'modul': not a key"),
        ("module", "--where 'module': expected KEY=VALUE"),
        ("status=running", "--where status: 'running' is not one of completed"),
        ("cleanup=tidy", "--where cleanup: 'tidy' is not one of"),
        ("ended_after=yesterday", "--where ended_after 'yesterday' is not an ISO 8601 time"),
        ("module=" + "x" * 300, "--where module: must be at most 200 long"),
    ):
        refused = cli("cleanup", "--where", where, "--plan", code=exits.USAGE)
        assert named in refused.out, (where, refused.out)
    twice = cli(
        "cleanup",
        "--where",
        "status=aborted",
        "--where",
        "status=completed",
        "--plan",
        code=exits.USAGE,
    )
    assert "--where status: given twice" in twice.out
    for usage in (
        ["cleanup"],
        ["cleanup", "--where", "module=sandbox"],
        ["cleanup", "--plan", "--apply", "abc"],
    ):
        cli(*usage, code=exits.USAGE)
    if cli.mode == "direct":  # through a server the token names who asks
        cli("cleanup", "--apply", "abc", code=exits.USAGE)

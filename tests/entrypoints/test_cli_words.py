"""The CLI speaks the vocabulary's words, on both stores: a run's cleanup and its log in words
with UTC times (the raw kinds in --json), and `runs --cleanup-status under_way` lists the ended
runs still being given back, never the running ones `pending` also holds."""

from __future__ import annotations

import json
from pathlib import Path

from runledger.application.words import CLEANUP
from tests.entrypoints.test_cli_json import Cli, cli_fixture, spec, start

__all__ = ["cli_fixture"]


def ids(cli: Cli, *args: str) -> set[str]:
    found = json.loads(cli("runs", "--json", *args).out)
    return {run["run_id"] for run in found["items"]}


def test_runs_under_way_lists_the_ended_runs_still_given_back_and_pending_also_the_running(
    cli: Cli, tmp_path: Path
) -> None:
    running = str(start(cli, tmp_path, spec("held", advance="manual")))
    cli("sandbox", "fault", "sandbox.spawn", "fail_revert", "1")
    going = str(start(cli, tmp_path, spec("going")))
    cli("tick")
    assert ids(cli, "--cleanup-status", "pending") == {running, going}
    assert ids(cli, "--cleanup-status", "under_way") == {going}
    said = cli("runs", "--cleanup-status", "under_way").out
    assert "going" in said and "held" not in said
    assert f"{CLEANUP['under_way'].signed}" in said
    both = cli("runs").out
    assert f"{CLEANUP['in_use'].signed}" in both
    helped = " ".join(cli("runs", "--help").out.split())
    assert "under_way" in helped and "pending" in helped
    wrong = cli("runs", "--cleanup-status", "underway", code=2)
    assert "under_way" in wrong.out + wrong.err


def test_a_runs_log_reads_in_words_with_utc_times_and_json_keeps_the_kinds(
    cli: Cli, tmp_path: Path
) -> None:
    run = str(start(cli, tmp_path, spec("fair")))
    cli("tick")
    said = cli("log", run).out
    assert "cleanup ✓ nothing left — 2 given back" in said
    assert " UTC run started " in said and " UTC given back " in said
    assert "cleanup.reverted" not in said and "run.started" not in said
    kinds = [line["kind"] for line in json.loads(cli("log", run, "--json").out)["log"]["lines"]]
    assert "run.started" in kinds and "cleanup.reverted" in kinds

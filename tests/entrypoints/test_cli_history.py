"""`replay` and `step` as a person runs them, on an SQLite file and on PostgreSQL, each on the
store directly and through a server over it (tests/support/remote_cli.py) as the token's person,
with the same expectations: an entry is named by its ref or kind:ref either way, an ambiguous
or unknown ref is one sentence and exit 1, and `replay --entry` reads the run and that entry.

The festival is test_history.py's: one run that passed every entry state, each act at its own
minute past noon."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from runledger.application.cli.doors.door import CANDIDATES, entry_id
from runledger.application.cli.keyed import terminal_person
from runledger.application.errors import BadRequest
from runledger.application.reading.schemas import runs
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.entry_reads import NAMED_AT_MOST
from tests.application.test_history import CURSED, LEASE, Festival, festival
from tests.conftest import Cli
from tests.support.playing import Clock, made, makes, play
from tests.support.remote_cli import Served

__all__ = ["festival"]


@pytest.fixture(params=["direct", "remote"])
def through(
    request: pytest.FixtureRequest, store_url: str, clock: Clock
) -> Iterator[dict[str, str]]:
    """The environment of a command on the store directly, or through a server over it."""
    if request.param == "direct":
        yield {"RUNLEDGER_DATABASE_URL": store_url}
        return
    served = Served(Settings.model_validate({"database_url": store_url}))
    try:
        yield served.env(terminal_person())
    finally:
        served.server.should_exit = True
        while served.thread.is_alive():  # its loop sleeps by the test's frozen clock
            clock.advance(1)
            served.thread.join(0.05)
        served.close()


def one_sentence(done: subprocess.CompletedProcess[str], code: int) -> str:
    said = done.stdout + done.stderr
    assert done.returncode == code, said
    assert "Traceback" not in said and len(said.strip().splitlines()) == 1, said
    return said


def test_the_replay_command_prints_the_audit_trail_and_as_of_json(
    cli: Cli, festival: Festival, through: dict[str, str], tmp_path: Path
) -> None:
    shown = cli("replay", str(festival.run), cwd=tmp_path, env=through)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "giving it back failed" in shown.stdout and f"terminal: {CURSED}" in shown.stdout
    assert shown.stdout.strip().splitlines()[-1] == "run completed; cleanup ✓ nothing left"
    one = ("replay", str(festival.run), "--as-of", "2026-12-02T12:45:00", "--json", "--entry")
    then = cli(*one, "c2", cwd=tmp_path, env=through)
    assert then.returncode == 0, then.stdout + then.stderr
    found = json.loads(then.stdout)
    assert (found["cleanup_status"], found["run_status"]) == ("pending", "completed")
    assert [(e["name"], e["state"], e["attempts"]) for e in found["entries"]] == [
        ("creature:c2", "failing", 1)
    ]
    assert [line["event"] for line in found["lines"] if line["subject"] != "run"] == [
        "Recorded",
        "RevertClaimed",
        "RevertFailed",
    ]
    by_kind = cli(*one, "creature:c2", cwd=tmp_path, env=through)
    assert json.loads(by_kind.stdout) == found
    assert "Traceback" not in shown.stderr + then.stderr


def test_a_replay_of_an_entry_the_run_does_not_have_is_one_sentence(
    cli: Cli, festival: Festival, through: dict[str, str], tmp_path: Path
) -> None:
    asked = ("replay", str(festival.run), "--entry", "c9")
    sentence = f"run {festival.run} has no entry 'c9'"
    assert sentence in one_sentence(cli(*asked, cwd=tmp_path, env=through), 1)
    said = cli(*asked, "--json", cwd=tmp_path, env=through)
    assert json.loads(one_sentence(said, 1)) == {"detail": sentence}


def test_the_step_command_shows_one_version_as_json_by_a_unique_ref_and_refuses_an_ambiguous_one(
    cli: Cli, rl: Runledger, festival: Festival, through: dict[str, str], tmp_path: Path
) -> None:
    [again] = made(play(rl, makes("spawn", "c1"), name="rematch"), "spawn", "c1")
    shown = cli("step", "weather#plaza", "--at", "3", "--json", cwd=tmp_path, env=through)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    found = json.loads(shown.stdout)
    assert (found["entry_id"], found["name"], found["total"]) == (
        str(festival.ids[LEASE]),
        LEASE,
        6,
    )
    [frame] = found["frames"]
    assert (frame["version"], frame["event"]) == (3, "Drifted")
    assert frame["values"] == {"baseline": "clear", "applied": "storm", "current": "hail"}
    assert frame["changed"]["state"] == {"before": "live", "after": "drifted"}
    by_kind = cli("step", LEASE, "--at", "3", "--json", cwd=tmp_path, env=through)
    assert json.loads(by_kind.stdout) == found
    ambiguous = one_sentence(cli("step", "c1", "--at", "1", cwd=tmp_path, env=through), 1)
    assert "2 entries are named 'c1'; pass one id" in ambiguous
    assert str(festival.ids["creature:c1"]) in ambiguous and str(again) in ambiguous
    unknown = one_sentence(cli("step", "c9", cwd=tmp_path, env=through), 1)
    assert "no ledger entry named 'c9'" in unknown
    assert "Traceback" not in shown.stderr


def test_the_step_command_speaks_words_and_leaves_the_stored_names_to_json(
    cli: Cli, festival: Festival, through: dict[str, str], tmp_path: Path
) -> None:
    shown = cli("step", "weather#plaza", "--at", "3", cwd=tmp_path, env=through)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "version 3 of 6: found somebody else's value: left alone (Drifted) at 20" in shown.stdout
    assert " UTC" in shown.stdout
    for raw in ("claim_worker", "claim_expires_at", "last_error", "'drifted'"):
        assert raw not in shown.stdout, raw
    assert "drifted" in shown.stdout


REST = {
    "name": "creature:c1",
    "module": "game",
    "action": "game.spawn",
    "step": "s",
    "state": "failing",
    "attempts": 1,
    "terminal": False,
    "last_error": None,
    "next_attempt_at": None,
    "claimed_by": None,
    "claim_expires_at": None,
    "kept_by": None,
    "payload": None,
    "member_key": None,
    "until": None,
    "drift_current": None,
    "version": 2,
}


def test_a_ref_that_names_the_most_a_lookup_finds_is_refused_as_at_least_that_many() -> None:
    found = [
        runs.Entry.model_validate(
            {"entry_id": uuid4(), "run_id": uuid4(), "kind": "creature", "ref": "c1"} | REST
        )
        for _ in range(NAMED_AT_MOST)
    ]
    with pytest.raises(BadRequest) as refused:
        entry_id("c1", lambda _: found)
    said = str(refused.value)
    assert said.startswith(f"at least {NAMED_AT_MOST} entries are named 'c1'; pass one id: ")
    assert said.count("(run ") == CANDIDATES
    with pytest.raises(BadRequest, match=r"^2 entries are named"):
        entry_id("c1", lambda _: found[:2])

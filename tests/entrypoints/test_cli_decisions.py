"""`runledger keep` and `runledger retry`, on an SQLite file and on PostgreSQL, against the
sandbox world's own tables: a run the sandbox refused to give back needs a person (`log` exits
3) until one entry is retried (and is gone from the world) and the other kept (and stays in it)
in the named person's name; refusals exit 1 with one sentence, bad arguments exit 2, and
nothing is written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest

from runledger.application.bootstrap import bootstrap
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.cli import exits
from runledger.application.modules.protocol import Registry
from runledger.application.reading.schemas.decisions import EntryRetried, Kept
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.projections.queries import EntryRow
from tests.entrypoints.test_cli_json import (
    Cli,
    cli_fixture,  # noqa: F401  (a fixture)
    ended_incomplete,
    parsed,
    spec,
    start,
)
from tests.support.reading import lines, written

WHY = "the crow nests stay for the next festival"


@pytest.fixture
def ledger(store_url: str) -> Iterator[Runledger]:
    """The test's store, read directly (no modules loaded)."""
    with bootstrap(Settings(database_url=store_url), Registry()) as rl:
        yield rl


def crows(rl: Runledger, run: UUID) -> list[EntryRow]:
    rl.projector.catch_up()
    return sorted(rl.queries.unresolved_entries(run), key=lambda e: e.ref)


def test_retrying_one_entry_and_keeping_the_other_lets_the_run_leave_needs_a_person(
    cli: Cli, tmp_path: Path, ledger: Runledger
) -> None:
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")
    run = ended_incomplete(cli, tmp_path, "crows")
    cli("log", str(run), code=exits.CLEANUP_INCOMPLETE)
    first, second = crows(ledger, run)
    assert set(world.things()) == {first.ref, second.ref}
    retried = parsed(
        EntryRetried,
        cli("retry", str(run), str(first.entry_id), "--by", "bob", "--json", code=3),
    )
    assert (retried.state, retried.reverted, retried.by) == ("reverted", 1, "bob")
    assert (retried.cleanup_status, retried.remaining) == ("incomplete", 1)
    assert set(world.things()) == {second.ref}  # given back in the world; the other not asked
    said = cli("keep", str(run), str(second.entry_id), "--reason", WHY, "--by", "bob").out
    assert f"kept 1 entry of {run} in the name bob: {WHY}" in " ".join(said.split())
    assert "cleanup ✓ nothing left, 0 entries unresolved" in said
    assert set(world.things()) == {second.ref}  # kept: it stays in the world
    shown = cli("log", str(run)).out
    assert f"by=bob  entry={second.name}  reason={WHY}" in shown
    assert [line.detail for line in lines(ledger, run, "cleanup.retry_one")] == [
        {"by": "bob", "entry": first.name}
    ]
    assert [line.detail for line in lines(ledger, run, "cleanup.kept_one")] == [
        {"by": "bob", "reason": WHY, "entry": second.name}
    ]


def test_keeping_what_is_left_needs_no_entry(cli: Cli, tmp_path: Path, ledger: Runledger) -> None:
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")
    run = ended_incomplete(cli, tmp_path, "crows")
    left = crows(ledger, run)
    kept = parsed(Kept, cli("keep", str(run), "--reason", WHY, "--by", "bob", "--json"))
    assert sorted(k.entry_id for k in kept.kept) == sorted(e.entry_id for e in left)
    assert (kept.cleanup_status, kept.reason) == ("complete", WHY)
    assert set(world.things()) == {e.ref for e in left}
    cli("log", str(run))
    refused = cli("keep", str(run), "--reason", WHY, "--by", "bob", code=exits.FAILED)
    assert "has nothing left to keep" in refused.out


def test_refusals_exit_1_bad_arguments_exit_2_and_nothing_is_written(
    cli: Cli, tmp_path: Path, ledger: Runledger
) -> None:
    run = ended_incomplete(cli, tmp_path, "crows")
    first, _ = crows(ledger, run)
    going = start(cli, tmp_path, spec("going", advance="manual"))
    cli("tick")
    before = written(ledger)
    entry = str(first.entry_id)
    for args in (
        ["keep", str(run), entry, "--reason", "", "--by", "bob"],
        ["keep", str(run), entry, "--reason", "   ", "--by", "bob"],
        ["keep", str(run), entry, "--reason", "a\x00b", "--by", "bob"],
        ["keep", str(run), entry, "--reason", "x" * 10_001, "--by", "bob"],
        ["keep", str(run), entry, "--reason", WHY, "--by", " "],
        ["keep", str(run), entry, "--by", "bob"],
        ["retry", str(run), "--by", "bob"],
        ["retry", str(run), entry, "--by", "bob", "--reason", ""],
        ["retry", str(run), "not-an-id", "--by", "bob"],
    ):
        done = cli(*args, code=exits.USAGE)
        assert "Traceback" not in done.out + done.err
    if cli.mode == "direct":  # through a server the token names who decides
        cli("keep", str(run), entry, "--reason", WHY, code=exits.USAGE)
    said = cli("keep", str(run), entry, "--reason", "", "--by", "bob", code=exits.USAGE).out
    assert "--reason: must not be empty" in said
    refused = cli("keep", str(going), "--reason", WHY, "--by", "bob", code=exits.FAILED)
    assert f"run going ({going}) is still running" in " ".join(refused.out.split())
    unknown = cli("retry", str(run), str(going), "--by", "bob", code=exits.FAILED)
    assert f"run {run} has no entry {going}" in " ".join(unknown.out.split())
    as_json = cli("keep", str(going), "--reason", WHY, "--by", "bob", "--json", code=exits.FAILED)
    assert as_json.out.startswith('{"detail": "run going (')
    assert written(ledger) == before


def test_keep_and_retry_under_a_key_decide_once_and_answer_the_first_answer_again(
    cli: Cli, tmp_path: Path, ledger: Runledger
) -> None:
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")
    run = ended_incomplete(cli, tmp_path, "crows")
    first, second = crows(ledger, run)
    retry = ("retry", str(run), str(first.entry_id), "--by", "bob", "--idempotency-key", "r")
    answered = cli(*retry, "--json", code=3).out
    assert cli(*retry, "--json", code=3).out == answered
    keep = ("keep", str(run), "--reason", WHY, "--by", "bob", "--idempotency-key", "k")
    kept = cli(*keep, "--json").out
    assert cli(*keep, "--json").out == kept, "not 'nothing left to keep'"
    assert set(world.things()) == {second.ref}
    assert len(lines(ledger, run, "cleanup.retry_one")) == 1
    assert len(lines(ledger, run, "cleanup.kept_rest")) == 1

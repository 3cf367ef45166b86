"""`runledger def` on the sandbox world, on SQLite and PostgreSQL: the W5 walk as an operator
makes it, every command's --json (the API's models), exit codes, and a dry run that leaves the
world's file as it was."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runledger.application.cli import answers, exits
from runledger.application.reading.schemas import definitions, runs
from tests.entrypoints.test_cli_json import (
    Cli,
    cli_fixture,  # noqa: F401  (a fixture)
    parsed,
)


def spec_file(tmp_path: Path, name: str, *steps: dict[str, Any], advance: str = "auto") -> str:
    path = tmp_path / f"{name}.json"
    document = {"name": name, "phases": [{"id": "p", "advance": advance, "steps": list(steps)}]}
    path.write_text(json.dumps(document))
    return str(path)


def spawn(count: int = 2, kind: str = "crow") -> dict[str, Any]:
    return {"id": "s", "action": "sandbox.spawn", "params": {"kind": kind, "count": count}}


def zone(name: str) -> dict[str, Any]:
    return {"id": "z", "action": "sandbox.zone", "params": {"name": name, "duration_s": 600}}


def world_digest(tmp_path: Path) -> str:
    return hashlib.sha256((tmp_path / "sandbox.sqlite3").read_bytes()).hexdigest()


def test_the_w5_walk_from_the_shell(cli: Cli, tmp_path: Path) -> None:
    harvest = spec_file(tmp_path, "harvest", spawn())
    made = parsed(
        definitions.DefinitionDetail,
        cli("def", "create", "harvest", "--file", harvest, "--by", "ann", "--json"),
    )
    assert (made.name, made.created_by, made.draft_verified) == ("harvest", "ann", None)
    said = cli("def", "verify", "harvest", "--by", "rita", "--json").out
    assert json.loads(said)["draftRecorded"] is True
    verified = parsed(
        definitions.Verified, cli("def", "verify", "harvest", "--by", "rita", "--json")
    )
    assert verified.passed and verified.fingerprint == made.fingerprint
    published = parsed(
        definitions.Published, cli("def", "publish", "harvest", "--by", "paul", "--json")
    )
    assert (published.version, published.verified, published.verified_by) == (1, True, "rita")
    now = datetime.now(UTC).isoformat()
    occurrence = parsed(
        definitions.Occurrence,
        cli("def", "schedule", "harvest", "--at", now, "--by", "sam", "--json"),
    )
    assert occurrence.verified is not None and occurrence.verified.by == "rita"
    ticked = parsed(answers.Tick, cli("tick", "--json"))
    [run_id] = ticked.started
    [started] = parsed(list[definitions.Occurrence], cli("def", "occurrences", "harvest", "--json"))
    assert (started.state, started.run_id) == ("started", run_id)
    shown = parsed(answers.RunLog, cli("log", str(run_id), "--json"))
    assert shown.run.run.origin is not None
    assert (shown.run.run.origin.definition, shown.run.run.origin.verified_by) == (
        "harvest",
        "rita",
    )
    edited = spec_file(tmp_path, "harvest2", spawn(count=3))
    saved = parsed(
        definitions.DraftSaved,
        cli("def", "edit", "harvest", "--file", edited, "--by", "ann", "--json"),
    )
    assert saved.changed and saved.draft_verified is None
    unverified = cli("def", "publish", "harvest", "--by", "paul").out
    assert "version 2 published unverified" in unverified and "nothing was stamped" in unverified
    versions = parsed(list[definitions.VersionSummary], cli("def", "versions", "harvest", "--json"))
    assert [(v.version, v.verified is not None) for v in versions] == [(1, True), (2, False)]
    frozen = parsed(
        definitions.VersionDetail, cli("def", "show", "harvest", "--version", "1", "--json")
    )
    assert frozen.spec["phases"][0]["steps"][0]["params"]["count"] == 2
    [listed] = parsed(list[definitions.DefinitionSummary], cli("def", "list", "--json"))
    assert (listed.name, listed.versions, listed.dry_runs) == ("harvest", 2, 2)
    for words in (["def", "list"], ["def", "show", "harvest"], ["def", "occurrences"]):
        assert "harvest" in cli(*words).out


def test_a_dry_run_with_problems_exits_1_naming_each_field_and_leaves_the_world_alone(
    cli: Cli, tmp_path: Path
) -> None:
    held = spec_file(tmp_path, "held", zone("gate"), advance="manual")
    cli("start", held)
    cli("tick")  # the gate is open now, and stays open: its phase waits for a person
    gate = spec_file(tmp_path, "gate", zone("gate"), {**spawn(count=0), "id": "none"})
    cli("def", "create", "gate", "--file", gate, "--by", "ann")
    before = world_digest(tmp_path)
    found = cli("def", "verify", "gate", "--by", "rita", "--json", code=exits.FAILED)
    answer = parsed(definitions.Verified, found)
    assert answer.problems == [
        "phases.0.steps.0.params.name: a zone named 'gate' is already open",
        "phases.0.steps.1.params.count: must be at least 1",
    ]
    said = cli("def", "verify", "gate", "--by", "rita", code=exits.FAILED).out
    assert "found 2 problem(s); the draft is not verified" in said
    assert "phases.0.steps.1.params.count" in said
    assert world_digest(tmp_path) == before
    page = parsed(runs.RunPage, cli("runs", "--json"))
    assert len(page.items) == 1, "a dry run starts nothing"


def test_refusals_exit_1_and_usage_exits_2(cli: Cli, tmp_path: Path) -> None:
    good = spec_file(tmp_path, "good", spawn())
    assert "no definition named nothing" in cli("def", "verify", "nothing", "--by", "r", code=1).out
    cli("def", "create", "good", "--file", good, "--by", "ann")
    assert "already exists" in cli("def", "create", "good", "--file", good, "--by", "a", code=1).out
    assert (
        "no published version"
        in cli("def", "schedule", "good", "--at", "2030-01-01T00:00:00", "--by", "sam", code=1).out
    )
    cli("def", "schedule", "good", "--at", "tomorrow", "--by", "sam", code=exits.USAGE)
    cli("def", "create", "other", "--by", "ann", code=exits.USAGE)  # no --file
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "phases": [{"id": "p", "steps": [{"id": "no way"}]}]}')
    refused = cli("def", "edit", "good", "--file", str(bad), "--by", "ann", code=1).out
    assert "spec.phases.0.steps.0.id" in refused
    unchanged = cli("def", "edit", "good", "--file", good, "--by", "ann").out
    assert "nothing recorded" in unchanged
    cli("def", "publish", "good", "--by", "paul")
    made = cli("def", "schedule", "good", "--at", "2030-01-01T00:00:00", "--by", "sam", "--json")
    occurrence = parsed(definitions.Occurrence, made).occurrence_id
    cancelled = parsed(
        definitions.Occurrence, cli("def", "cancel", str(occurrence), "--by", "sam", "--json")
    )
    assert (cancelled.state, cancelled.cancelled_by) == ("cancelled", "sam")
    assert "was cancelled" in cli("def", "cancel", str(occurrence), "--by", "sam", code=1).out


def test_hostile_names_and_problems_are_shown_never_obeyed(cli: Cli, tmp_path: Path) -> None:
    hostile = {"id": "s", "action": '\x1b[31m"><img src=x onerror=alert(1)>', "params": {}}
    cli("def", "create", "hostile", "--file", spec_file(tmp_path, "h", hostile), "--by", "<b>ann")
    said = cli("def", "verify", "hostile", "--by", "\x1b]0;pwned\x07rita", code=exits.FAILED)
    assert "\x1b" not in said.out and "\\x1b[31m" in said.out
    assert '"><img src=x onerror=alert(1)>' in said.out  # shown as text, a terminal has no HTML
    shown = cli("def", "show", "hostile").out
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b]0;pwned" in shown

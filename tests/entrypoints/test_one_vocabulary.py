"""SPEC "One vocabulary": every run status, cleanup status, entry state, entry event and log
kind has its words once, in application/words.py, and the console, the CLI and the API's
descriptions read them there. These tests fail when the words are written a second time
anywhere in the package (a string that is one of them, a table keyed by statuses or states, a
template that spells one out), when a state or a log kind has no words, and when the words say
something untrue: kept read as given back, a running run's entries as anything but in use."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

from runledger.application import plain, words
from runledger.application.api.app import routes
from runledger.domain.fate import STATES
from runledger.domain.run import RunStatus
from runledger.domain.runlog import LOG_KINDS
from runledger.domain.status import CleanupFilter, CleanupStatus
from runledger.domain.subscription import Fact

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ("application", "domain", "projections")
HOME = ROOT / "application" / "words.py"
TABLES = (
    words.RUN,
    words.CLEANUP,
    words.STATE,
    words.MODULE,
    words.RUNNER,
    words.OCCURRENCE,
    words.LOG,
)
KEYS = {key for table in TABLES for key in table} | set(words.EVENT)
PHRASES = {
    said
    for said in [
        *(w.said for table in TABLES for w in table.values()),
        words.LEFT.said,
        *words.EVENT.values(),
    ]
    if said not in KEYS  # a state whose word is its own name ("kept") is a key wherever it is
}
STATUSES = set(get_args(CleanupFilter)) | set(words.CLEANUP)


def sources() -> Iterator[Path]:
    for folder in PACKAGE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != HOME:
                yield path


def strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every string constant that is not a docstring and not a piece of an f-string."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    pieces = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and id(node) not in pieces
        ):
            yield node.lineno, node.value


def tables(tree: ast.AST) -> Iterator[ast.Dict]:
    """Dict literals keyed by the vocabulary's own keys: statuses, states, log kinds."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and type(k.value) is str}
        if (
            len(keys & STATUSES) >= 2
            or len(keys & set(STATES)) >= 3
            or len(keys & set(words.RUN)) >= 3
            or len(keys & set(words.LOG)) >= 2
            or len(keys & set(words.EVENT)) >= 3
        ):
            yield node


def test_no_string_in_the_package_is_a_second_copy_of_the_words() -> None:
    copies = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in sources()
        for line, value in strings(ast.parse(path.read_text(), str(path)))
        if value.strip() in PHRASES
    ]
    assert copies == []


def test_no_module_but_the_vocabulary_keeps_a_table_of_statuses_or_states() -> None:
    copies = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sources()
        for node in tables(ast.parse(path.read_text(), str(path)))
    ]
    assert copies == []


def test_no_template_spells_out_the_words() -> None:
    templates = sorted((ROOT / "application" / "web" / "templates").glob("*.html"))
    spelt = [
        f"{path.name}: {phrase!r}"
        for path in templates
        for phrase in PHRASES
        if " " in phrase
        and re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", _text(path.read_text()))
    ]
    assert spelt == []


def _text(template: str) -> str:
    """A template's own text: its Jinja expressions and tags' attributes taken out."""
    return re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|<[^>]*>", " ", template, flags=re.S)


def test_every_state_status_and_log_kind_has_its_words() -> None:
    assert list(words.STATE) == list(STATES) or set(words.STATE) == set(STATES)
    assert set(words.RUN) == set(get_args(RunStatus))
    for status in get_args(CleanupStatus):
        assert words.cleanup_key("running", status) in words.CLEANUP
        assert words.cleanup_key("completed", status) in words.CLEANUP
    assert set(words.FILTER) == set(get_args(CleanupFilter))
    assert set(words.LOG) == set(LOG_KINDS)
    written = {
        kind
        for path in sources()
        for kind in re.findall(r'"((?:run|step|cleanup|resource)\.[a-z_]+)"', path.read_text())
    }
    told = set(get_args(Fact))  # what a webhook tells, a vocabulary of its own (webhooks.py)
    assert {kind for kind in written if not kind.endswith(".html")} - set(LOG_KINDS) - told == set()


def test_the_api_describes_each_status_and_state_in_the_same_words() -> None:
    schemas = routes().openapi()["components"]["schemas"]
    cleanup = schemas["RunSummary"]["properties"]["cleanup_status"]["description"]
    for key in ("not_required", "in_use", "under_way", "complete", "incomplete"):
        assert words.CLEANUP[key].said in cleanup, key
    state = schemas["Entry"]["properties"]["state"]["description"]
    for key, said in words.STATE.items():
        assert f"`{key}`: {said.said}" in state


def test_kept_never_reads_as_given_back_and_a_running_run_reads_in_use() -> None:
    kept = words.cleanup_said("cancelled", "complete", 4, 0, {"reverted": 3, "kept": 1}, {"bob": 1})
    assert kept == "✓ nothing left — 3 given back, 1 kept by bob"
    everything_kept = words.cleanup_said("cancelled", "complete", 2, 0, {"kept": 2})
    assert everything_kept == "✓ nothing left — 2 kept"
    assert "given back" not in everything_kept
    running = words.cleanup_said("running", "pending", 3, 2, {"live": 2, "reverted": 1})
    assert running == "… in use — 2 entries in use by the run; 1 given back"
    ended = words.cleanup_said("completed", "pending", 2, 2, {"failing": 2})
    assert ended == "… giving back — 2 of 2 entries left"
    assert words.state_word("live", running=True).said == "in use"
    assert words.state_word("live", running=False).said == "not yet given back"
    assert words.cleanup_said("completed", "not_required", 0, 0, {}) == "· nothing to give back"


def test_an_error_reads_as_history_once_its_entry_is_settled_and_values_as_people_read_them() -> (
    None
):
    assert words.error_said("failing", "down") == "down"
    for settled in ("reverted", "expired", "kept"):
        assert words.error_said(settled, "down") == "earlier attempt failed: down"
    assert words.error_said("reverted", None) is None
    assert plain.value_said("storm") == "storm"
    assert plain.value_said(None) == "—"
    assert plain.value_said(True) == "yes"
    assert plain.value_said("2026-12-02T12:00:05+00:00") == "2026-12-02 12:00:05 UTC"
    assert plain.value_said({"rain": [0.2]}) == '{"rain": [0.2]}'
    assert words.field_value("state", "superseded") == "replaced"
    assert words.log_kind("cleanup.reverted").said == "given back"
    assert words.log_kind("entry.something_new").said == "entry: something new"
    assert words.event_said("PhaseAdvanced") == "phase advanced"

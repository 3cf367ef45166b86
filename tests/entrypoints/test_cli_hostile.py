"""Issue 8's cases through the real CLI, on both stores, with a hostile module loaded from a
folder as an operator would load one."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.forked_cli import ForkedCli

MODULE_CODE = textwrap.dedent("""
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no message")

    class Treacherous(dict):
        def get(self, *args, **kwargs):
            raise RuntimeError("no get")

    async def _raising():
        raise Unprintable()

    def perform(params, idempotency_key, run_id):
        if params.get("perform") == "nan-payload":
            return {"ok": True, "resources": [
                {"kind": "t", "ref": idempotency_key, "payload": {"n": float("nan")}}]}
        return {"ok": True, "resources": [
            {"kind": "t", "ref": idempotency_key, "payload": {"revert": params.get("revert")}}]}

    def revert(resources, idempotency_key, run_id):
        how = resources[0]["payload"]["revert"] if resources else None
        if how == "nul-error":
            return {"ok": False, "error": "nul\\x00byte"}
        if how == "surrogate-error":
            return {"ok": False, "error": "bad\\ud800"}
        if how == "unprintable":
            raise Unprintable()
        if how == "treacherous":
            return Treacherous()
        if how == "coroutine":
            return _raising()
        return {"ok": True}

    def register(ctx):
        ctx.action("hostile.thing", perform=perform, revert=revert, budget_ms=2000)
""")


@pytest.fixture
def env(tmp_path: Path, store_url: str) -> dict[str, str]:
    folder = tmp_path / "modules" / "hostile"
    folder.mkdir(parents=True)
    (folder / "module.toml").write_text(
        'name = "hostile"\nsite = "hostile-site"\napi = "2.0"\nentry = "code.py:register"\n',
        encoding="utf-8",
    )
    (folder / "code.py").write_text(MODULE_CODE, encoding="utf-8")
    return {"RUNLEDGER_DATABASE_URL": store_url, "RUNLEDGER_MODULES_DIR": str(tmp_path / "modules")}


@pytest.fixture
def server(tmp_path: Path, env: dict[str, str]) -> Iterator[ForkedCli]:
    """Each command in a fresh process, forked from one that imported the CLI once."""
    forked = ForkedCli(tmp_path / "cli", env)
    yield forked
    forked.close()


def cli(server: ForkedCli, *args: str, code: int = 0) -> str:
    done = server.run(*args, cwd=server.folder.parent)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert done.returncode == code, out
    return done.stdout


def start(server: ForkedCli, name: str, **params: Any) -> str:
    spec = {
        "name": name,
        "phases": [
            {"id": "p", "steps": [{"id": "s", "action": "hostile.thing", "params": params}]}
        ],
    }
    path = server.folder.parent / f"{name}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return cli(server, "start", str(path)).strip().splitlines()[-1]


def every_reader(server: ForkedCli, runs: list[str]) -> None:
    cli(server, "runs")
    for run in runs:
        cli(server, "log", run)
        cli(server, "replay", run)
        cli(server, "replay", run, "--json")
    cli(server, "tick")
    cli(server, "rebuild", "--verify")


@pytest.mark.slow
def test_case_1_a_nan_in_a_spec_is_refused_and_a_nan_in_an_answer_is_a_retry(
    tmp_path: Path, server: ForkedCli
) -> None:
    spec = tmp_path / "nan.json"
    spec.write_text(
        '{"name": "n", "phases": [{"id": "p", "steps": [{"id": "s", '
        '"action": "hostile.thing", "params": {"note": NaN}}]}]}',
        encoding="utf-8",
    )
    refused = cli(server, "start", str(spec), code=1)
    assert "phases.0.steps.0.params.note: nan is not a number a ledger can store" in refused
    run = start(server, "nan-answer", perform="nan-payload")
    cli(server, "tick")
    assert "nan is not a number a ledger can store" in cli(server, "log", run)
    every_reader(server, [run])


@pytest.mark.slow
def test_case_2_nul_and_surrogates_never_stop_a_store_and_a_module_s_error_stays_visible(
    tmp_path: Path, server: ForkedCli
) -> None:
    spec = tmp_path / "nul.json"
    spec.write_text(
        '{"name": "a\\u0000b", "phases": [{"id": "p", "steps": [{"id": "s", '
        '"action": "hostile.thing"}]}]}',
        encoding="utf-8",
    )
    assert "name: a text must not contain the NUL character" in cli(
        server, "start", str(spec), code=1
    )
    nul = start(server, "nul-error", revert="nul-error")
    surrogate = start(server, "surrogate-error", revert="surrogate-error")
    cli(server, "tick")
    assert "nul\\x00byte" in cli(server, "log", nul)
    assert "bad\\ud800" in cli(server, "log", surrogate)
    every_reader(server, [nul, surrogate])


@pytest.mark.slow
def test_case_4_answers_that_make_judging_raise_record_a_verdict_and_a_readable_error(
    server: ForkedCli,
) -> None:
    runs = {
        how: start(server, how, revert=how) for how in ("unprintable", "treacherous", "coroutine")
    }
    cli(server, "tick")
    for how, run in runs.items():
        shown = cli(server, "log", run)
        assert "1 attempt" in shown, (how, shown)
        if how != "treacherous":
            assert "Unprintable (its message could not be read)" in shown, shown
    every_reader(server, list(runs.values()))

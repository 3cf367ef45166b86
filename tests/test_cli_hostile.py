"""Issue 8's cases through the real CLI, on both stores, with a hostile module loaded from a
folder as an operator would load one."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import run_cli

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
        'name = "hostile"\nsite = "hostile-site"\napi = "1.0"\nentry = "code.py:register"\n',
        encoding="utf-8",
    )
    (folder / "code.py").write_text(MODULE_CODE, encoding="utf-8")
    return {"RUNLEDGER_DATABASE_URL": store_url, "RUNLEDGER_MODULES_DIR": str(tmp_path / "modules")}


def cli(tmp_path: Path, env: dict[str, str], *args: str, code: int = 0) -> str:
    done = run_cli(*args, cwd=tmp_path, env=env)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert done.returncode == code, out
    return done.stdout


def start(tmp_path: Path, env: dict[str, str], name: str, **params: Any) -> str:
    spec = {
        "name": name,
        "phases": [
            {"id": "p", "steps": [{"id": "s", "action": "hostile.thing", "params": params}]}
        ],
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return cli(tmp_path, env, "start", str(path)).strip().splitlines()[-1]


def every_reader(tmp_path: Path, env: dict[str, str], runs: list[str]) -> None:
    cli(tmp_path, env, "runs")
    for run in runs:
        cli(tmp_path, env, "log", run)
        cli(tmp_path, env, "replay", run)
        cli(tmp_path, env, "replay", run, "--json")
    cli(tmp_path, env, "tick")
    cli(tmp_path, env, "rebuild", "--verify")


@pytest.mark.slow
def test_case_1_a_nan_in_a_spec_is_refused_and_a_nan_in_an_answer_is_a_retry(
    tmp_path: Path, env: dict[str, str]
) -> None:
    spec = tmp_path / "nan.json"
    spec.write_text(
        '{"name": "n", "phases": [{"id": "p", "steps": [{"id": "s", '
        '"action": "hostile.thing", "params": {"note": NaN}}]}]}',
        encoding="utf-8",
    )
    refused = cli(tmp_path, env, "start", str(spec), code=1)
    assert "phases.0.steps.0.params.note: nan is not a number a ledger can store" in refused
    run = start(tmp_path, env, "nan-answer", perform="nan-payload")
    cli(tmp_path, env, "tick")
    assert "nan is not a number a ledger can store" in cli(tmp_path, env, "log", run)
    every_reader(tmp_path, env, [run])


@pytest.mark.slow
def test_case_2_nul_and_surrogates_never_stop_a_store_and_a_module_s_error_stays_visible(
    tmp_path: Path, env: dict[str, str]
) -> None:
    spec = tmp_path / "nul.json"
    spec.write_text(
        '{"name": "a\\u0000b", "phases": [{"id": "p", "steps": [{"id": "s", '
        '"action": "hostile.thing"}]}]}',
        encoding="utf-8",
    )
    assert "name: a text must not contain the NUL character" in cli(
        tmp_path, env, "start", str(spec), code=1
    )
    nul = start(tmp_path, env, "nul-error", revert="nul-error")
    surrogate = start(tmp_path, env, "surrogate-error", revert="surrogate-error")
    cli(tmp_path, env, "tick")
    assert "nul\\x00byte" in cli(tmp_path, env, "log", nul)
    assert "bad\\ud800" in cli(tmp_path, env, "log", surrogate)
    every_reader(tmp_path, env, [nul, surrogate])


@pytest.mark.slow
def test_case_4_answers_that_make_judging_raise_record_a_verdict_and_a_readable_error(
    tmp_path: Path, env: dict[str, str]
) -> None:
    runs = {
        how: start(tmp_path, env, how, revert=how)
        for how in ("unprintable", "treacherous", "coroutine")
    }
    cli(tmp_path, env, "tick")
    for how, run in runs.items():
        shown = cli(tmp_path, env, "log", run)
        assert "1 attempt" in shown, (how, shown)
        if how != "treacherous":
            assert "Unprintable (its message could not be read)" in shown, shown
    every_reader(tmp_path, env, list(runs.values()))

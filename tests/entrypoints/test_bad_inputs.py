"""Issue 27's bad inputs, each said in one sentence naming the problem, nothing written: on the
CLI (in-process, both stores), the loader, the console and the API."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from itsdangerous import TimestampSigner

from runledger.application.bootstrap import bootstrap
from runledger.application.cli import exits
from runledger.application.cli.app import run
from runledger.application.cli.console import console as terminal
from runledger.application.errors import NotInitialised, StoreCorrupt
from runledger.application.modules.loader import Loader, ModuleEvents
from runledger.application.modules.protocol import Registry
from runledger.application.runledger import Runledger
from runledger.application.settings import Settings
from runledger.domain.values import validation_problem
from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)
from tests.support.console_support import Console, console_fixture, text_of  # noqa: F401

SPEC = {
    "name": "Harvest",
    "phases": [
        {
            "id": "p",
            "advance": "manual",
            "steps": [
                {"id": "s", "action": "sandbox.spawn", "params": {"kind": "crow", "count": 1}}
            ],
        }
    ],
}
NOT_UTF8 = b'{"name": "caf\xe9", "phases": []}'


@pytest.fixture
def cli(
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Cli]:
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("RUNLEDGER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RUNLEDGER_DATABASE_URL", store_url)
    monkeypatch.setenv("RUNLEDGER_SANDBOX_PATH", str(tmp_path / "sandbox.sqlite3"))
    width = terminal.width
    terminal.width = 80
    with bootstrap(Settings(database_url=store_url), Registry()) as reader:
        yield Cli(capsys, reader)
    terminal.width = width


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str], reader: Runledger) -> None:
        self.capsys = capsys
        self.reader = reader

    def events(self) -> int:
        return self.reader.app.recorder.max_notification_id() or 0

    def __call__(self, *args: str, code: int = 0) -> str:
        said = self.capsys.readouterr()
        got = run(list(args))
        said = self.capsys.readouterr()
        out = said.out + said.err
        assert "Traceback" not in out, out
        assert got == code, (args, got, out)
        return out

    def refused(self, *args: str, code: int = exits.FAILED) -> str:
        """A refusal: one sentence, and not one event more in the store."""
        before = self.events()
        out = self(*args, code=code).strip()
        assert out.startswith(("runledger: ", '{"detail"')) and "\n" not in out, out
        assert self.events() == before, f"{args} wrote to the store"
        return out


def test_a_spec_file_or_stdin_that_is_not_utf8_is_refused_naming_it(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "latin1.json").write_bytes(NOT_UTF8)
    said = "latin1.json: byte 0xe9 at offset 13 is not UTF-8; save it as UTF-8 text"
    assert said in cli.refused("start", "latin1.json")
    assert said in cli.refused("def", "create", "harvest", "-f", "latin1.json", "--by", "rita")
    (tmp_path / "spec.json").write_text(json.dumps(SPEC), encoding="utf-8")
    cli("def", "create", "harvest", "-f", "spec.json", "--by", "rita")
    assert said in cli.refused("def", "edit", "harvest", "-f", "latin1.json", "--by", "rita")
    monkeypatch.setattr("sys.stdin", stdin(NOT_UTF8))
    assert "stdin: byte 0xe9" in cli.refused("start", "-")


def stdin(data: bytes) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")


def test_the_same_kind_of_bad_value_exits_2_whichever_option_carries_it_and_writes_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(SPEC), encoding="utf-8")
    run_id = cli("start", "spec.json").strip().splitlines()[-1]
    usage = exits.USAGE
    for args in (
        ("advance", run_id, "--by", ""),
        ("cancel", run_id, "--by", "  ", "--no-cleanup"),
        ("cleanup", run_id, "--by", ""),
        ("reconcile", "sandbox", "--by", ""),
        ("def", "publish", "harvest", "--by", ""),
        ("abort", run_id, "--reason", ""),
        ("advance", run_id, "--by", "x" * 201),
        ("tick", "--worker", "w\udcff" * 300),
        ("runs", "--limit", "0"),
        ("runs", "--limit", "abc"),
        ("runs", "--colour", "red"),
        ("log", "not-a-run"),
        ("cancel",),
        ("token", "create", "bob", "--role", "god"),
        ("token", "create", ""),
        ("def", "show", "not a name"),
    ):
        said = cli.refused(*args, code=usage)
        assert said.startswith("runledger: ") and "Usage:" not in said, said
    assert "RUN_ID: must be an id (a UUID" in cli.refused("log", "not-a-run", code=usage)
    assert "--by: must name the person who asks" in cli.refused(
        "advance", run_id, "--by", "", "--json", code=usage
    )
    # The state of things refusing is exit 1, the input being fine.
    assert "no run" in cli.refused("log", "00000000-0000-0000-0000-000000000000")
    monkeypatch.setattr("sys.stdin", stdin(b"[]"))
    assert "spec: must be an object" in cli.refused("start", "-")


def test_runs_in_text_says_how_to_get_the_next_page(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(SPEC), encoding="utf-8")
    for _ in range(3):
        cli("start", "spec.json")
    first = cli("runs", "--limit", "2")
    cursor = re.search(r"run this again with --cursor (\S+)", first)
    assert cursor is not None, first
    rest = cli("runs", "--limit", "2", "--cursor", cursor.group(1))
    assert rest.count("Harvest") == 1 and "--cursor" not in rest


def test_tables_at_80_columns_never_cut_an_id_a_state_or_a_reason(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = json.loads(cli("token", "create", "a-person-with-a-long-name", "--json"))
    listed = cli("token", "list")
    assert issued["token_id"] in listed and "…" not in listed, listed
    broken = tmp_path / "modules" / "broken"
    (broken / "module.toml").mkdir(parents=True)
    monkeypatch.setenv("RUNLEDGER_MODULES_DIR", str(tmp_path / "modules"))
    monkeypatch.setenv("RUNLEDGER_BUILTIN_MODULES", "sandbox,sandbx")
    shown = cli("modules")
    assert "…" not in shown and "startup_failed" in shown, shown
    # Folded, a reason reads on when its row's other cells have ended.
    squeezed = re.sub(r"[\s│┃]", "", shown)
    assert "module.tomlisafolder,notafile" in squeezed, shown
    assert "'sandbx',whichisnobuilt-inmodule(thereareredis,sandbox)" in squeezed, shown


def test_a_module_toml_that_is_a_folder_fails_that_module_alone(tmp_path: Path) -> None:
    (tmp_path / "a_broken" / "module.toml").mkdir(parents=True)
    good = tmp_path / "b_good"
    good.mkdir()
    (good / "module.toml").write_text(
        'name = "good"\nsite = "good"\napi = "2.0"\nentry = "code.py:register"\n'
    )
    (good / "code.py").write_text("def register(ctx):\n    pass\n")
    registry = Registry()
    loader = Loader(registry, lambda name: ModuleEvents(name, _nothing, _nothing), {})
    found = {s.folder.rsplit("/", 1)[-1]: (s.status, s.reason) for s in loader.load([tmp_path])}
    assert found == {
        "a_broken": ("startup_failed", "module.toml is a folder, not a file"),
        "b_good": ("loaded", None),
    }


def _nothing(*_: object) -> dict[str, int]:
    return {}


def test_an_unknown_builtin_module_is_shown_as_failed_to_start_naming_it() -> None:
    loader = Loader(Registry(), lambda name: ModuleEvents(name, _nothing, _nothing), {})
    statuses = loader.load_builtins(["sandbox", "sandbx", "../sandbox"])
    assert [(s.name, s.status) for s in statuses] == [
        ("sandbox", "loaded"),
        (None, "startup_failed"),
        (None, "startup_failed"),
    ]
    assert statuses[1].reason == (
        "RUNLEDGER_BUILTIN_MODULES names 'sandbx', which is no built-in module "
        "(there are redis, sandbox)"
    )
    loader.close()


def test_a_damaged_sqlite_file_is_refused_by_every_command_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.sqlite3"
    url = f"sqlite:///{path}"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNLEDGER_DATABASE_URL", url)
    monkeypatch.setenv("RUNLEDGER_SANDBOX_PATH", str(tmp_path / "sandbox.sqlite3"))
    (tmp_path / "spec.json").write_text(json.dumps(SPEC), encoding="utf-8")
    assert run(["init"]) == 0
    for _ in range(8):
        assert run(["start", "spec.json"]) == 0
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
        (page,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'rl_runs'").fetchone()
    size = db_page_size(path)
    with path.open("r+b") as damaged:
        damaged.seek((page - 1) * size)
        damaged.write(bytes(range(256)) * (size // 256))
    before = path.read_bytes()
    capsys.readouterr()
    for args in (["start", "spec.json"], ["runs"], ["tick"], ["init"], ["token", "list"]):
        code = run(args)
        said = capsys.readouterr().out.strip()
        assert code == exits.FAILED and "\n" not in said, (args, said)
        assert f"the SQLite file {path} is" in said and "(corrupted" in said, said
    assert path.read_bytes() == before
    with pytest.raises(StoreCorrupt, match="nothing was written"):
        bootstrap(Settings(database_url=url), Registry())


def db_page_size(path: Path) -> int:
    with sqlite3.connect(path) as db:
        size: int = db.execute("PRAGMA page_size").fetchone()[0]
    return size


def test_a_mistyped_sqlite_path_is_refused_naming_init_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUNLEDGER_DATABASE_URL", f"sqlite:///{tmp_path / 'ledgr.sqlite3'}")
    for args in (["runs"], ["tick"], ["token", "list"], ["modules"]):
        code = run(args)
        said = capsys.readouterr().out
        assert code == exits.FAILED, said
        assert "ledgr.sqlite3 does not exist: run `runledger init` to create it" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(NotInitialised):
        bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'x.sqlite3'}"), Registry())
    assert run(["init"]) == 0 and (tmp_path / "ledgr.sqlite3").exists()


def test_a_console_reason_that_is_not_utf8_is_refused_naming_the_field(
    console: Console, api: Api
) -> None:
    run_id = api.start(shard_run(1, advance="manual"))
    console.sign_in("operator")
    csrf = console.form_token(f"/runs/{run_id}")
    before = api.rl.app.recorder.max_notification_id()
    answer = api.client.post(
        f"/runs/{run_id}/confirm/abort",
        content=f"csrf={csrf}&reason=%FF%FE%FD".encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert answer.status_code == 422, answer.text
    assert "reason: the text sent is not UTF-8" in text_of(answer.text)
    boundary = "b0undary"
    parts = [(b"csrf", csrf.encode()), (b"reason", b"\xff\xfe\xfd")]
    body = b"".join(
        b'--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n'
        % (boundary.encode(), name, value)
        for name, value in parts
    )
    answer = api.client.post(
        f"/runs/{run_id}/confirm/abort",
        content=body + f"--{boundary}--\r\n".encode(),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
        follow_redirects=False,
    )
    assert answer.status_code == 422, answer.text
    assert "reason: the text sent is not UTF-8" in text_of(answer.text)
    assert api.rl.app.recorder.max_notification_id() == before
    assert api.run(run_id)["run"]["status"] == "running"
    sent = api.client.post(  # the same form in UTF-8 passes as it came
        f"/runs/{run_id}/confirm/abort",
        content=body.replace(b"\xff\xfe\xfd", "déjà".encode()) + f"--{boundary}--\r\n".encode(),
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
        follow_redirects=False,
    )
    assert sent.status_code == 303, sent.text
    assert api.run(run_id)["run"]["status"] == "aborted"


def test_a_cookie_another_secret_signed_gets_the_sign_in_page_not_the_csrf_refusal(
    console: Console, api: Api
) -> None:
    run_id = api.start(shard_run(1, advance="manual"))
    session = {"token": "x", "since": 0, "csrf": "forged"}
    signed = TimestampSigner("another console's secret").sign(
        base64.b64encode(json.dumps(session).encode())
    )
    api.client.cookies.set("runledger_session", signed.decode())
    answer = console.post(f"/runs/{run_id}/confirm/abort", {"csrf": "forged", "reason": "x"})
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"].startswith("/signin?next=")
    assert "session+has+ended" in answer.headers["location"].replace("%20", "+")
    assert api.run(run_id)["run"]["status"] == "running"


def test_any_param_key_in_a_refused_spec_is_a_422_never_a_500(api: Api) -> None:
    for key in ("²", "٣", "1" * 40, "a.b", "x: y", "0"):
        body = (
            '{"name": "n", "phases": [{"id": "p", "steps": [{"id": "s", "action": '
            f'"shard.spawn", "params": {{{json.dumps(key)}: NaN}}}}]}}]}}'
        )
        answer = api.client.post(
            "/admin/events/runs",
            content=body,
            headers={**api.headers("operator"), "content-type": "application/json"},
        )
        assert answer.status_code == 422, (key, answer.text)
        assert "nan is not a number a ledger can store" in answer.text


def test_refusals_say_plain_words_not_python_types_or_patterns() -> None:
    from pydantic import ValidationError

    from runledger.domain.spec import RunSpec

    said = []
    documents: list[object] = [[], {"name": "n", "phases": [{"id": "bad id", "steps": []}]}, {}]
    for document in documents:
        try:
            RunSpec.model_validate(document)
        except ValidationError as error:
            said.append(validation_problem(error, whole="spec"))
    assert said == [
        "spec: must be an object ({...})",
        "phases.0.id: must be a letter or digit, then up to 63 letters, digits, '_', '.' or '-'",
        "name: is required",
    ]

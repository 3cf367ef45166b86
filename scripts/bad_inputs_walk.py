"""A new user's walk over bad inputs (issue 27): the CLI in-process, the HTTP API and the
console's forms, on an SQLite file and on PostgreSQL (skipped when no server answers).

Each input is tried on a store holding one running run; what it answered is recorded with
whether a traceback or a 5xx appeared and whether the store's event count moved. Prints one line
per input and a summary per surface and store; exits 1 when any input crashed or wrote.

    .venv/bin/python -m scripts.bad_inputs_walk [--quiet]
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap, init_store
from runledger.application.cli.app import run
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings

PG_ADMIN = os.environ.get("RUNLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
SPEC = {
    "name": "walk",
    "phases": [
        {
            "id": "p",
            "advance": "manual",
            "steps": [{"id": "s", "action": "sandbox.spawn", "params": {"kind": "crow"}}],
        }
    ],
}
NIL = "00000000-0000-0000-0000-000000000000"


@dataclass
class Tried:
    store: str
    surface: str
    label: str
    outcome: str
    crashed: bool
    wrote: bool


def walk_settings(folder: Path, url: str) -> Settings:
    """The store at ``url`` with the sandbox world in ``folder``, as the CLI's are."""
    sandbox = str(folder / "sandbox.sqlite3")
    return Settings.from_env({"RUNLEDGER_DATABASE_URL": url, "RUNLEDGER_SANDBOX_PATH": sandbox})


def events(url: str) -> int:
    with bootstrap(Settings(database_url=url), Registry()) as rl:
        return rl.app.recorder.max_notification_id() or 0


@contextlib.contextmanager
def stores(folder: Path) -> Iterator[list[tuple[str, str]]]:
    found = [("sqlite", f"sqlite:///{folder / 'walk.sqlite3'}")]
    schema = f"walk_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        found.append(("postgres", f"{PG_ADMIN}?schema={schema}"))
    except psycopg.Error as error:
        print(f"PostgreSQL skipped: {str(error).splitlines()[0]}", file=sys.stderr)
    try:
        yield found
    finally:
        if len(found) > 1:
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def cli(
    folder: Path, url: str, args: list[str], stdin: bytes = b"", env: dict[str, str] | None = None
) -> tuple[str, bool]:
    """The command's exit code and whether it crashed (an exception or a printed traceback)."""
    saved = dict(os.environ)
    os.environ.update(
        {
            "RUNLEDGER_DATABASE_URL": url,
            "RUNLEDGER_SANDBOX_PATH": str(folder / "sandbox.sqlite3"),
            **(env or {}),
        }
    )
    out, err = io.StringIO(), io.StringIO()
    stdin_was = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    crashed = False
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: Any = run(args)
    except Exception as error:  # what the walk is looking for: never expected
        code, crashed = f"raised {type(error).__name__}", True
    finally:
        sys.stdin = stdin_was
        os.environ.clear()
        os.environ.update(saved)
    said = out.getvalue() + err.getvalue()
    return f"exit {code}", crashed or "Traceback" in said


def cli_cases(folder: Path, run_id: str) -> list[tuple[str, list[str], bytes, dict[str, str]]]:
    (folder / "latin1.json").write_bytes(b'{"name": "caf\xe9"}')
    (folder / "nan.json").write_text(
        '{"name": "n", "phases": [{"id": "p", "steps": '
        '[{"id": "s", "action": "sandbox.spawn", "params": '
        '{"\\u00b2": NaN}}]}]}'
    )
    (folder / "big.json").write_text(json.dumps({"name": "x" * 2_000_000}))
    (folder / "nul.json").write_text(json.dumps({**SPEC, "name": "a\x00b"}))
    (folder / "ghost.json").write_text(
        json.dumps({**SPEC, "phases": [{"id": "p", "steps": [{"id": "s", "action": "no.such"}]}]})
    )
    (folder / "four.json").write_text(
        json.dumps(
            {
                **SPEC,
                "phases": [
                    {
                        "id": "p",
                        "steps": [
                            {"id": "s", "action": "sandbox.spawn", "params": {"count": "four"}}
                        ],
                    }
                ],
            }
        )
    )
    broken = folder / "modules" / "broken" / "module.toml"
    broken.mkdir(parents=True, exist_ok=True)
    long = "x" * 300
    odd = "bad\udcff"
    return [
        ("start: a file that is not UTF-8", ["start", "latin1.json"], b"", {}),
        ("start: stdin that is not UTF-8", ["start", "-"], b"\xff\xfe{}", {}),
        ("start: a JSON list", ["start", "-"], b"[]", {}),
        ("start: truncated JSON", ["start", "-"], b'{"name": "x", "phases": [', {}),
        ("start: an empty stdin", ["start", "-"], b"", {}),
        ("start: NaN under the key ²", ["start", "nan.json"], b"", {}),
        ("start: a name with NUL", ["start", "nul.json"], b"", {}),
        ("start: a 2 MB spec", ["start", "big.json"], b"", {}),
        ("start: an unknown action", ["start", "ghost.json"], b"", {}),
        ('start: count "four"', ["start", "four.json"], b"", {}),
        ("start: no such file", ["start", "nowhere.json"], b"", {}),
        ("start: a folder", ["start", "modules"], b"", {}),
        (
            "def create: not UTF-8",
            ["def", "create", "d1", "-f", "latin1.json", "--by", "r"],
            b"",
            {},
        ),
        (
            "def create: a bad name",
            ["def", "create", "a b", "-f", "nan.json", "--by", "r"],
            b"",
            {},
        ),
        ("def create: --by empty", ["def", "create", "d2", "-f", "nan.json", "--by", ""], b"", {}),
        ("def show: a bad name", ["def", "show", "../etc"], b"", {}),
        ("def show: unknown", ["def", "show", "nothere"], b"", {}),
        ("def schedule: --at not a time", ["def", "schedule", "x", "--at", "soon"], b"", {}),
        ("def cancel: not an id", ["def", "cancel", "nope", "--by", "r"], b"", {}),
        ("cancel: --by empty", ["cancel", run_id, "--by", ""], b"", {}),
        ("cancel: --by not UTF-8", ["cancel", run_id, "--by", odd], b"", {}),
        ("advance: --by 300 chars", ["advance", run_id, "--by", long], b"", {}),
        ("advance: --by blank --json", ["advance", run_id, "--by", " ", "--json"], b"", {}),
        ("abort: --reason empty", ["abort", run_id, "--reason", ""], b"", {}),
        ("abort: unknown run", ["abort", NIL, "--reason", "x"], b"", {}),
        ("cleanup: a running run", ["cleanup", run_id, "--by", "r"], b"", {}),
        ("cleanup: --where unknown key", ["cleanup", "--where", "colour=red", "--plan"], b"", {}),
        ("cleanup: --where 300 chars", ["cleanup", "--where", f"module={long}", "--plan"], b"", {}),
        (
            "cleanup: --apply without --by",
            ["cleanup", "--where", "module=x", "--apply", "f"],
            b"",
            {},
        ),
        ("log: not an id", ["log", "nope"], b"", {}),
        ("log: unknown run", ["log", NIL], b"", {}),
        ("log: --since not a time", ["log", run_id, "--since", "yesterday"], b"", {}),
        ("runs: --limit 0", ["runs", "--limit", "0"], b"", {}),
        ("runs: --limit abc", ["runs", "--limit", "abc"], b"", {}),
        ("runs: --limit huge", ["runs", "--limit", "9" * 30], b"", {}),
        ("runs: --cursor garbage", ["runs", "--cursor", "garbage"], b"", {}),
        ("runs: --cleanup-status bogus", ["runs", "--cleanup-status", "bogus"], b"", {}),
        ("runs: --name not UTF-8", ["runs", "--name", odd], b"", {}),
        ("replay: --as-of not a time", ["replay", run_id, "--as-of", "never"], b"", {}),
        ("replay: --entry unknown", ["replay", run_id, "--entry", "nothing"], b"", {}),
        ("step: unknown entry", ["step", "nothing"], b"", {}),
        ("step: not UTF-8", ["step", odd], b"", {}),
        ("token create: empty name", ["token", "create", ""], b"", {}),
        ("token create: --role god", ["token", "create", "bob", "--role", "god"], b"", {}),
        ("token revoke: not an id", ["token", "revoke", "nope"], b"", {}),
        ("token revoke: unknown", ["token", "revoke", NIL], b"", {}),
        ("tick: --worker not UTF-8", ["tick", "--worker", odd], b"", {}),
        ("runner: --interval 0", ["runner", "--interval", "0"], b"", {}),
        ("serve: --port 70000", ["serve", "--port", "70000"], b"", {}),
        ("reconcile: unknown module", ["reconcile", "nothere", "--by", "r"], b"", {}),
        ("rebuild: unknown projection", ["rebuild", "nothere", "--verify"], b"", {}),
        ("sandbox fault: unknown knob", ["sandbox", "fault", "x", "nothere"], b"", {}),
        ("modules: module.toml a folder", ["modules"], b"", {"RUNLEDGER_MODULES_DIR": "modules"}),
        ("modules: builtin 'nosuch'", ["modules"], b"", {"RUNLEDGER_BUILTIN_MODULES": "nosuch"}),
        ("runs: EVENT_REVERT_MAX_ATTEMPTS=x", ["runs"], b"", {"EVENT_REVERT_MAX_ATTEMPTS": "x"}),
        ("runs: a mysql:// URL", ["runs"], b"", {"RUNLEDGER_DATABASE_URL": "mysql://x/y"}),
        *keyed_cases(run_id),
    ]


def keyed_cases(run_id: str) -> list[tuple[str, list[str], bytes, dict[str, str]]]:
    """--idempotency-key, bad on every command that takes one, and --plan given one."""
    acts = {
        "def create": ["def", "create", "k1", "-f", "walk.json", "--by", "r"],
        "def publish": ["def", "publish", "walk", "--by", "r"],
        "token create": ["token", "create", "kim"],
        "keep": ["keep", run_id, "--reason", "x", "--by", "r"],
        "retry": ["retry", run_id, NIL, "--by", "r"],
        "cleanup": ["cleanup", run_id, "--by", "r"],
    }
    bad = {"empty": "", "a NUL": "k\x00", "201 chars": "k" * 201, "a newline": "k\nk"}
    cases: list[tuple[str, list[str], bytes, dict[str, str]]] = [
        (f"{name}: --idempotency-key {said}", [*args, "--idempotency-key", key], b"", {})
        for name, args in acts.items()
        for said, key in bad.items()
    ]
    plan = ["cleanup", "--where", "module=x", "--plan", "--idempotency-key", "p"]
    return [*cases, ("cleanup --plan: --idempotency-key", plan, b"", {})]


def api_cases(run_id: str) -> list[tuple[str, str, str, dict[str, Any], str | None]]:
    runs = "/admin/events/runs"
    raw = {"content-type": "application/json"}

    def body(text: str | bytes) -> dict[str, Any]:
        return {"content": text, "headers": raw}

    spec = json.dumps(SPEC)
    return [
        ("POST runs: not JSON", "POST", runs, body("{"), "operator"),
        ("POST runs: not UTF-8", "POST", runs, body(b'{"name": "\xff"}'), "operator"),
        ("POST runs: a list", "POST", runs, body("[]"), "operator"),
        (
            "POST runs: NaN under ²",
            "POST",
            runs,
            body(spec.replace('"kind": "crow"', '"\\u00b2": NaN')),
            "operator",
        ),
        (
            "POST runs: NaN under ٣",
            "POST",
            runs,
            body(spec.replace('"kind": "crow"', '"\\u0663": NaN')),
            "operator",
        ),
        (
            "POST runs: a name with NUL",
            "POST",
            runs,
            body(spec.replace('"walk"', '"a\\u0000b"')),
            "operator",
        ),
        (
            "POST runs: a lone surrogate",
            "POST",
            runs,
            body(spec.replace('"walk"', '"\\ud800"')),
            "operator",
        ),
        (
            "POST runs: unknown action",
            "POST",
            runs,
            body(spec.replace("sandbox.spawn", "no.such")),
            "operator",
        ),
        (
            'POST runs: count "four"',
            "POST",
            runs,
            body(spec.replace('"kind": "crow"', '"count": "four"')),
            "operator",
        ),
        ("POST runs: as a viewer", "POST", runs, body(spec), "viewer"),
        ("POST runs: no token", "POST", runs, body(spec), None),
        ("POST runs: a wrong token", "POST", runs, body(spec), "wrong"),
        ("GET run: not an id", "GET", f"{runs}/nope", {}, "viewer"),
        ("GET run: unknown", "GET", f"{runs}/{NIL}", {}, "viewer"),
        ("GET runs: limit=0", "GET", f"{runs}?limit=0", {}, "viewer"),
        ("GET runs: limit=abc", "GET", f"{runs}?limit=abc", {}, "viewer"),
        ("GET runs: cursor garbage", "GET", f"{runs}?cursor=garbage", {}, "viewer"),
        ("GET runs: cleanup_status bogus", "GET", f"{runs}?cleanup_status=bogus", {}, "viewer"),
        ("GET runs: name NUL", "GET", f"{runs}?name=a%00b", {}, "viewer"),
        ("GET log: before=0", "GET", f"{runs}/{run_id}/log?before=0", {}, "viewer"),
        (
            "POST abort: reason empty",
            "POST",
            f"{runs}/{run_id}/abort",
            {"json": {"reason": ""}},
            "operator",
        ),
        ("POST abort: no body", "POST", f"{runs}/{run_id}/abort", {}, "operator"),
        (
            "POST abort: reason NUL",
            "POST",
            f"{runs}/{run_id}/abort",
            body('{"reason": "a\\u0000"}'),
            "operator",
        ),
        (
            "POST cancel: cleanup 'maybe'",
            "POST",
            f"{runs}/{run_id}/cancel",
            {"json": {"cleanup": "maybe"}},
            "operator",
        ),
        ("POST advance: unknown run", "POST", f"{runs}/{NIL}/advance", {}, "operator"),
        ("POST cleanup: a running run", "POST", f"{runs}/{run_id}/cleanup", {}, "operator"),
        (
            "POST tokens: role god",
            "POST",
            "/admin/tokens",
            {"json": {"name": "b", "role": "god"}},
            "admin",
        ),
        (
            "POST tokens: name empty",
            "POST",
            "/admin/tokens",
            {"json": {"name": "", "role": "viewer"}},
            "admin",
        ),
        (
            "POST tokens: as an operator",
            "POST",
            "/admin/tokens",
            {"json": {"name": "b", "role": "viewer"}},
            "operator",
        ),
        ("DELETE token: not an id", "DELETE", "/admin/tokens/nope", {}, "admin"),
        (
            "POST definitions: a bad name",
            "POST",
            "/admin/definitions",
            {"json": {"name": "a b", "spec": SPEC}},
            "operator",
        ),
        (
            "POST definitions: spec a string",
            "POST",
            "/admin/definitions",
            {"json": {"name": "d", "spec": "x"}},
            "operator",
        ),
        (
            "POST plan: where bogus",
            "POST",
            "/admin/events/cleanup/plan",
            {"json": {"colour": "red"}},
            "operator",
        ),
        (
            "POST apply: no fingerprint",
            "POST",
            "/admin/events/cleanup/apply",
            {"json": {"where": {}}},
            "operator",
        ),
        ("GET entry: not an id", "GET", "/admin/entries/nope", {}, "viewer"),
        ("GET entry: unknown", "GET", f"/admin/entries/{NIL}", {}, "viewer"),
        (
            "POST reconcile: unknown module",
            "POST",
            "/admin/modules/nothere/reconcile",
            {},
            "operator",
        ),
    ]


def console_cases(run_id: str) -> list[tuple[str, str, bytes, str, bool]]:
    """(label, path, body, content type, signed in); the CSRF token is put in for {csrf}."""
    form = "application/x-www-form-urlencoded"
    abort = f"/runs/{run_id}/confirm/abort"
    return [
        ("sign in: a wrong token", "/signin", b"csrf={csrf}&token=nope&next=/runs", form, False),
        ("sign in: a token not UTF-8", "/signin", b"csrf={csrf}&token=%FF%FE", form, False),
        ("abort: reason empty", abort, b"csrf={csrf}&reason=", form, True),
        ("abort: reason with NUL", abort, b"csrf={csrf}&reason=a%00b", form, True),
        ("abort: reason not UTF-8", abort, b"csrf={csrf}&reason=%FF%FE%FD", form, True),
        ("abort: reason 20,000 chars", abort, b"csrf={csrf}&reason=" + b"x" * 20_000, form, True),
        ("abort: no CSRF token", abort, b"reason=x", form, True),
        ("abort: a wrong CSRF token", abort, b"csrf=forged&reason=x", form, True),
        ("abort: not signed in", abort, b"csrf=forged&reason=x", form, False),
        ("confirm: unknown action", f"/runs/{run_id}/confirm/explode", b"csrf={csrf}", form, True),
        ("confirm: run not an id", "/runs/nope/confirm/abort", b"csrf={csrf}&reason=x", form, True),
        ("confirm: unknown run", f"/runs/{NIL}/confirm/cancel", b"csrf={csrf}", form, True),
        (
            "draft: not JSON",
            "/definitions/nothere/draft",
            b"csrf={csrf}&spec=%7B&revision=1",
            form,
            True,
        ),
        (
            "draft: spec not UTF-8",
            "/definitions/nothere/draft",
            b"csrf={csrf}&spec=%FF&revision=1",
            form,
            True,
        ),
        ("sign out: not signed in", "/signout", b"csrf=forged", form, False),
    ]


def walk(folder: Path, store: str, url: str) -> list[Tried]:
    init_store(Settings(database_url=url))
    found: list[Tried] = []
    with bootstrap(walk_settings(folder, url)) as rl:
        run_id = str(rl.runs.start(SPEC))
        secrets = {
            r: rl.tokens.issue(f"walker-{r}", r, by="walk").secret
            for r in ("viewer", "operator", "admin")
        }
        secrets["wrong"] = "not-a-token"
        client = TestClient(create_app(rl), raise_server_exceptions=False)

        def count() -> int:
            return rl.app.recorder.max_notification_id() or 0

        for label, method, path, kwargs, who in api_cases(run_id):
            before = count()
            headers = {
                **kwargs.pop("headers", {}),
                **({"Authorization": f"Bearer {secrets[who]}"} if who else {}),
            }
            answer = client.request(method, path, headers=headers, **kwargs)
            found.append(
                Tried(
                    store,
                    "API",
                    label,
                    f"HTTP {answer.status_code}",
                    answer.status_code >= 500,
                    count() != before,
                )
            )
        for label, path, body, kind, signed in console_cases(run_id):
            client.cookies.clear()
            if signed:
                csrf = _csrf(client.get("/signin").text)
                client.post(
                    "/signin", data={"csrf": csrf, "token": secrets["operator"], "next": "/runs"}
                )
            csrf = _csrf(client.get("/runs" if signed else "/signin").text)
            before = count()
            answer = client.post(
                path,
                content=body.replace(b"{csrf}", csrf.encode()),
                headers={"content-type": kind},
                follow_redirects=False,
            )
            shown = f"HTTP {answer.status_code}" + (
                " → sign-in" if "/signin" in answer.headers.get("location", "") else ""
            )
            found.append(
                Tried(store, "console", label, shown, answer.status_code >= 500, count() != before)
            )
        client.close()
    for label, args, stdin, env in cli_cases(folder, run_id):
        before = events(url)
        if env.get("RUNLEDGER_MODULES_DIR"):
            env = {**env, "RUNLEDGER_MODULES_DIR": str(folder / env["RUNLEDGER_MODULES_DIR"])}
        with contextlib.chdir(folder):
            code, crashed = cli(folder, url, args, stdin, env)
        found.append(Tried(store, "CLI", label, code, crashed, events(url) != before))
    if store == "sqlite":
        found += sqlite_files(folder)
    return found


def _csrf(html: str) -> str:
    marker = 'name="csrf" value="'
    return html.split(marker, 1)[1].split('"', 1)[0] if marker in html else ""


def sqlite_files(folder: Path) -> list[Tried]:
    """The file itself: mistyped, damaged, or not a database at all."""
    found = []
    missing = folder / "typo.sqlite3"
    (folder / "walk.json").write_text(json.dumps(SPEC))
    for args in (["runs"], ["start", str(folder / "walk.json")], ["tick"]):
        code, crashed = cli(folder, f"sqlite:///{missing}", args)
        found.append(
            Tried("sqlite", "CLI", f"{args[0]}: a mistyped path", code, crashed, missing.exists())
        )
    damaged = folder / "damaged.sqlite3"
    url = f"sqlite:///{damaged}"
    init_store(Settings(database_url=url))
    with bootstrap(walk_settings(folder, url)) as rl:
        rl.runs.start(SPEC)
    with sqlite3.connect(damaged) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (page,) = db.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'stored_events'"
        ).fetchone()
    with damaged.open("r+b") as file:
        file.seek((page - 1) * 4096)
        file.write(bytes(range(256)) * 16)
    kept = damaged.read_bytes()
    for args in (["start", str(folder / "walk.json")], ["runs"], ["tick"], ["init"]):
        code, crashed = cli(folder, url, args)
        found.append(
            Tried(
                "sqlite",
                "CLI",
                f"{args[0]}: a damaged file",
                code,
                crashed,
                damaged.read_bytes() != kept,
            )
        )
    noise = folder / "noise.sqlite3"
    noise.write_bytes(os.urandom(16_384))
    kept = noise.read_bytes()
    for args in (["runs"], ["start", str(folder / "walk.json")], ["init"]):
        code, crashed = cli(folder, f"sqlite:///{noise}", args)
        found.append(
            Tried(
                "sqlite",
                "CLI",
                f"{args[0]}: random bytes",
                code,
                crashed,
                noise.read_bytes() != kept,
            )
        )
    return found


def _yes(flag: bool) -> str:
    return "YES" if flag else "-"


def main() -> int:
    quiet = "--quiet" in sys.argv
    tried: list[Tried] = []
    with tempfile.TemporaryDirectory() as top, stores(Path(top)) as found:
        for store, url in found:
            folder = Path(top) / store
            folder.mkdir()
            tried += walk(folder, store, url)
    if not quiet:
        print(f"{'store':9}{'surface':9}{'input':40}{'outcome':22}crash  wrote")
        for t in tried:
            print(
                f"{t.store:9}{t.surface:9}{t.label[:39]:40}{t.outcome:22}{_yes(t.crashed):7}",
                end="",
            )
            print(_yes(t.wrote))
    print("\nstore     surface  inputs  tracebacks/5xx  written")
    for (store, surface), n in sorted(Counter((t.store, t.surface) for t in tried).items()):
        mine = [t for t in tried if (t.store, t.surface) == (store, surface)]
        crashed, wrote = sum(t.crashed for t in mine), sum(t.wrote for t in mine)
        print(f"{store:10}{surface:9}{n:6}  {crashed:14}  {wrote:7}")
    bad = [t for t in tried if t.crashed or t.wrote]
    crashed, wrote = sum(t.crashed for t in tried), sum(t.wrote for t in tried)
    print(f"{len(tried)} inputs: {crashed} tracebacks or 5xx, {wrote} wrote")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""schemathesis against a real `runledger serve`, every check, for a set time, then the counts.

    .venv/bin/python -m scripts.fuzz_api [--minutes 10] [--postgres] [--seed N]

A fresh store (an SQLite file, or a private PostgreSQL schema under RUNLEDGER_TEST_PG) with a
few runs and a definition in it, `serve` on a spare port with the sandbox module, and an admin's
token. schemathesis runs every phase (examples, coverage, fuzzing, stateful) with `--checks all`
until the time is spent; scripts/fuzz_api_hooks.py teaches it the one rule no schema can state
(ids unique within a spec). Printed: the test cases, then each check's failures —
`not_a_server_error` (server errors), `positive_data_acceptance` (a schema-valid request
rejected), `status_code_conformance` (an undocumented status code),
`negative_data_rejection` (a schema-violating request accepted) first, 0 when none. Exit 0
when every count is 0. The suite keeps a short fuzz of its own (tests/entrypoints/test_api_fuzz.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from scripts.pg import PG_ADMIN, drop_pg_url, new_pg_url

RUNLEDGER = [sys.executable, "-c", "from runledger.application.cli.app import main; main()"]
FIRST = (
    "Server error",
    "Schema-valid request rejected",
    "Undocumented status code",
    "Schema-violating request accepted",
)
SPAWN = {
    "name": "fuzz",
    "phases": [
        {"id": "p1", "steps": [{"id": "s", "action": "sandbox.spawn", "params": {"count": 2}}]}
    ],
}


def main() -> None:
    asked = _arguments()
    asked.out = asked.out.resolve()
    asked.out.mkdir(parents=True, exist_ok=True)
    with _store(asked.postgres) as url, tempfile.TemporaryDirectory() as folder:
        env = _environment(url, Path(folder))
        _cli(env, "init")
        secret = json.loads(_cli(env, "token", "create", "fuzz", "--role", "admin", "--json"))
        with _serving(env, Path(folder)) as base:
            _seed(base, secret["secret"])
            said = _fuzz(base, secret["secret"], asked)
    (asked.out / "fuzz_api.log").write_text(said, encoding="utf-8")
    counts = _counts(said)
    _print(counts, asked.out)
    sys.exit(0 if counts["cases"] and not any(counts["failures"].values()) else 1)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to fuzz (10)")
    parser.add_argument("--postgres", action="store_true", help="on PostgreSQL, not SQLite")
    parser.add_argument("--seed", type=int, default=29, help="schemathesis's seed (29)")
    parser.add_argument("--workers", type=int, default=1, help="concurrent workers (1)")
    parser.add_argument(
        "--out", type=Path, default=Path("artifacts/fuzz_api"), help="its log and reports"
    )
    return parser.parse_args()


@contextmanager
def _store(postgres: bool) -> Iterator[str]:
    if not postgres:
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/fuzz.sqlite3"
        return
    url = new_pg_url(PG_ADMIN)
    try:
        yield url
    finally:
        drop_pg_url(PG_ADMIN, url)


def _environment(url: str, folder: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RUNLEDGER_")}
    return environ | {
        "RUNLEDGER_DATABASE_URL": url,
        "RUNLEDGER_BUILTIN_MODULES": "sandbox",
        "RUNLEDGER_SANDBOX_PATH": str(folder / "sandbox.sqlite3"),
        # One client fuzzing from 127.0.0.1 sends many wrong tokens on purpose (ignored_auth):
        # the brake on failed tokens would then answer 429 to its right token too.
        "RUNLEDGER_FAILED_AUTH_PER_MINUTE": "100000",
    }


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*RUNLEDGER, *args], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"runledger {' '.join(args)} failed: {done.stdout}{done.stderr}")
    return done.stdout


@contextmanager
def _serving(env: dict[str, str], folder: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [*RUNLEDGER, "serve", "--port", str(port), "--interval", "0.5", "--worker", "fuzz"]
    log = folder / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _until_up(base, process, log)
        yield base
    finally:
        process.terminate()  # this script's own child, by its pid
        process.wait(timeout=30)
        tracebacks = log.read_text(errors="replace").count("Traceback")
        print(f"serve's log: {tracebacks} traceback(s)")


def _until_up(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"serve exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)  # not listening yet: ask again until the deadline
            continue
        time.sleep(0.2)
    raise SystemExit("serve did not answer /healthz within 60 s")


def _seed(base: str, secret: str) -> None:
    """A few runs (one ended), a definition published and scheduled: things to read and act on."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}) as client:
        runs = [client.post("/admin/events/runs", json=SPAWN) for _ in range(3)]
        run = runs[0].json()["run"]["run_id"]
        client.post(f"/admin/events/runs/{run}/abort", json={"reason": "fuzz seed"})
        client.post("/admin/definitions", json={"name": "fuzz", "spec": SPAWN})
        client.post("/admin/definitions/fuzz/publish")
        client.post("/admin/definitions/fuzz/occurrences", json={"at": "2036-01-01T00:00:00Z"})


def _fuzz(base: str, secret: str, asked: argparse.Namespace) -> str:
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        f"{base}/openapi.json",
        "--checks",
        "all",
        "--max-time",
        str(int(asked.minutes * 60)),
        "--seed",
        str(asked.seed),
        "--workers",
        str(asked.workers),
        "--header",
        f"Authorization: Bearer {secret}",
        "--report",
        "junit",
        "--report-dir",
        str(asked.out.resolve()),
        # A webhook added here would have the runner inside serve POST to whatever URL was
        # generated; the suite's fuzz covers those routes in process, with no runner.
        "--exclude-path-regex",
        "^/admin/webhooks",
        "--continue-on-failure",
        "--suppress-health-check",
        "all",
    ]
    budget = asked.minutes * 60 + 600
    hooks = {"SCHEMATHESIS_HOOKS": str(Path(__file__).with_name("fuzz_api_hooks.py"))}
    done = subprocess.run(  # in --out, where schemathesis keeps the crashes it replays next time
        command,
        capture_output=True,
        text=True,
        timeout=budget,
        env=os.environ | hooks,
        cwd=asked.out,
    )
    return done.stdout + done.stderr


def _counts(said: str) -> dict[str, Any]:
    """Test cases, and each kind of failure, as schemathesis's summary says them."""
    failures: Counter[str] = Counter({kind: 0 for kind in FIRST})
    summary = said.rsplit(" SUMMARY ", 1)[-1]
    listed = summary.split("Failures:", 1)[1].split("\n\n", 1)[0] if "Failures:" in summary else ""
    for kind, count in re.findall(r"^\W*(?:ST\d+ )?([^\n:]+?): (\d+)$", listed, re.MULTILINE):
        failures[kind] += int(count)
    cases = re.search(r"(\d+) generated", summary)
    return {"cases": int(cases[1]) if cases else 0, "failures": failures}


def _print(counts: dict[str, Any], out: Path) -> None:
    print(f"test cases: {counts['cases']}")
    for kind, failed in counts["failures"].most_common():
        print(f"  {kind}: {failed}")
    print(f"schemathesis's whole answer: {out / 'fuzz_api.log'}")


if __name__ == "__main__":
    main()

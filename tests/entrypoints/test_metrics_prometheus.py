"""Once, end to end: Debian's Prometheus (/usr/bin/prometheus, its own config, data folder and
spare port in tmp) scrapes a real `runledger serve` and evaluates the shipped rules, with every
`for:` cut to seconds in its copy, until RunledgerRunNeedsAPerson fires for a run whose cleanup
ended incomplete. Slow (about 20 s here); SQLite only, since the rules read serve's metrics the
same way on either store."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from runledger.application.bootstrap import init_store
from runledger.application.builtin_modules.sandbox.world import SandboxWorld
from runledger.application.settings import Settings
from tests.application.test_alert_rules import REQUIRE_PROMTOOL, RULES
from tests.entrypoints.test_api_serve import (
    RUNLEDGER,
    SPAWN,
    Served,
    _answers,
    a_run,
    environment,
    given_back,
    spare_port,
    token,
)
from tests.support.api_support import bearer
from tests.support.forked_cli import ForkedCli

PROMETHEUS = Path("/usr/bin/prometheus")
WAIT_S = 120.0

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path, cli_server: ForkedCli) -> Iterator[Served]:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    init_store(Settings(database_url=url))
    world = SandboxWorld(tmp_path / "sandbox.sqlite3")
    world.set_fault(SPAWN, "terminal")  # every give-back refused: cleanup ends incomplete
    env = environment(url, world.path)
    port = spare_port()
    log = tmp_path / "serve.log"
    command = [*RUNLEDGER, "serve", "--port", str(port), "--interval", "0.1", "--worker", "p"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        it = Served(process, client, log, token(cli_server, env, tmp_path, "alice", "operator"))
        it.until("serve answered /healthz", lambda: _answers(client, "/healthz"))
        yield it
    finally:
        client.close()
        if process.poll() is None:
            process.kill()  # this test's own child, by its pid
            process.wait(timeout=10)


@dataclass
class Prometheus:
    process: subprocess.Popen[bytes]
    client: httpx.Client
    log: Path

    def until(self, what: str, done: Callable[[], Any]) -> Any:
        """Poll ``done`` until it answers something truthy, or fail saying what never happened."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"prometheus exited: {self.output()}"
            found = done()
            if found:
                return found
            time.sleep(0.5)
        raise AssertionError(f"{what} within {WAIT_S:g}s; prometheus said: {self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def alerts(self) -> dict[str, dict[str, Any]]:
        said = self.client.get("/api/v1/alerts").json()["data"]["alerts"]
        return {alert["labels"]["alertname"]: alert for alert in said}

    def scraped(self) -> bool:
        query = {"query": "runledger_build_info"}
        return bool(self.client.get("/api/v1/query", params=query).json()["data"]["result"])


@pytest.fixture
def prometheus(served: Served, tmp_path: Path) -> Iterator[Prometheus]:
    if not PROMETHEUS.exists():
        if REQUIRE_PROMTOOL:
            pytest.fail(f"{PROMETHEUS} is required here (RUNLEDGER_REQUIRE_PROMTOOL=1)")
        pytest.skip(f"no {PROMETHEUS}: apt-get install prometheus (.ci/run does)")
    rules = tmp_path / "rules.yml"
    rules.write_text(re.sub(r"\bfor: \w+", "for: 2s", RULES.read_text()))
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{rules}]\n"
        "scrape_configs:\n"
        "  - job_name: runledger-serve\n"
        f"    static_configs: [{{targets: ['{served.client.base_url.netloc.decode()}']}}]\n"
    )
    port = spare_port()
    log = tmp_path / "prometheus.log"
    command = [
        str(PROMETHEUS),
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        it = Prometheus(process, client, log)
        it.until("Prometheus ready", lambda: _answers(client, "/-/ready"))
        yield it
    finally:
        client.close()
        if process.poll() is None:
            process.terminate()  # our own child, by its pid
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def test_a_real_prometheus_scraping_serve_fires_needs_a_person_for_an_incomplete_run(
    served: Served, prometheus: Prometheus
) -> None:
    prometheus.until("serve scraped", prometheus.scraped)
    time.sleep(3)  # a few evaluations with nothing incomplete: nothing to tell anyone
    assert "RunledgerRunNeedsAPerson" not in prometheus.alerts()
    answer = served.client.post("/admin/events/runs", json=a_run(), headers=bearer(served.secret))
    assert answer.status_code == 201, answer.text
    run = UUID(answer.json()["run"]["run_id"])
    served.until(
        "the run ended incomplete", lambda: given_back(served, served.secret, run, "incomplete")
    )
    prometheus.until(
        "RunledgerRunNeedsAPerson firing",
        lambda: prometheus.alerts().get("RunledgerRunNeedsAPerson", {}).get("state") == "firing",
    )
    said = prometheus.alerts()["RunledgerRunNeedsAPerson"]
    assert said["labels"]["severity"] == "page"
    assert said["annotations"]["summary"].startswith("1 runledger run(s) need a person")

"""The alert rules shipped in the package: promtool checks them and runs their unit tests
(tests/application/alerts/), and every series a rule reads is one runledger exposes.

promtool is Debian's `prometheus` package; .ci/run installs it and sets
RUNLEDGER_REQUIRE_PROMTOOL=1, so there a missing promtool fails rather than skips."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from runledger.application.fleet_metrics import ModulesCollector
from runledger.application.metrics_server import RunnerMetrics
from tests.conftest import Factory
from tests.support.api_support import (
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
)

RULES = Path(str(files("runledger.application") / "alerts" / "runledger.rules.yml"))
RULE_TESTS = Path(__file__).parent / "alerts" / "runledger.rules.test.yml"
REQUIRE_PROMTOOL = os.environ.get("RUNLEDGER_REQUIRE_PROMTOOL") == "1"
NOT_OURS_YET = {"runledger_webhook_deliveries_failed_total": "the webhooks' outbox (issue 30, W)"}
"""Series a rule reads that another part of runledger is to expose: listed, so that a rule on a
series nobody exposes is a failure here, not an alert that can never fire."""


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if REQUIRE_PROMTOOL:
            pytest.fail("promtool is required here (RUNLEDGER_REQUIRE_PROMTOOL=1): not on PATH")
        pytest.skip("no promtool: apt-get install prometheus (.ci/run does)")
    return found


def test_the_shipped_rules_are_valid_prometheus_rules() -> None:
    checked = subprocess.run(
        [promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout


def test_each_alert_fires_on_what_should_wake_someone_and_not_otherwise() -> None:
    tested = subprocess.run(
        [promtool(), "test", "rules", RULE_TESTS.name],
        cwd=RULE_TESTS.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_rule_tests_read_the_rules_the_package_ships() -> None:
    said = RULE_TESTS.read_text()
    (named,) = re.findall(r"rule_files:\n\s+- (\S+)", said)
    assert (RULE_TESTS.parent / named).resolve() == RULES.resolve()


def test_every_series_a_rule_reads_is_one_runledger_exposes(
    api: Api, make_runledger: Factory
) -> None:
    rules = re.sub(r"^\s*#.*$", "", RULES.read_text(), flags=re.M)  # what rules read, not notes
    wanted = set(re.findall(r"\b(runledger_\w+)", rules)) - set(NOT_OURS_YET)
    served = api.get("/metrics", None).text
    rl = make_runledger()
    runner = rl.runner("w")
    runner.join()
    try:
        registry = rl.telemetry.registry
        registry.register(RunnerMetrics(runner, rl.telemetry))
        registry.register(ModulesCollector(lambda: rl.modules))
        ran = generate_latest(registry).decode()
    finally:
        runner._leave()
    exposed = set(re.findall(r"^# TYPE (\S+)", served + ran, re.M))
    exposed |= {f"{name}_total" for name in exposed}
    assert wanted - exposed == set()

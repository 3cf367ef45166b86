"""schemathesis against the OpenAPI document the app serves, as an admin, on an SQLite file and
on PostgreSQL: valid and invalid requests for every operation; zero 5xx answers, every answer
one the document describes (status, content type, schema), and no request the document allows
refused as invalid. Bounded to fit CI: a few examples each; scripts/fuzz_api.py runs every check
against a real server for as long as it is given.

The operations are walked here, with hypothesis, rather than through schemathesis's pytest
plugin (``schema.parametrize()``): schemathesis 4.32 reads ``request.node._nodeid``, which
pytest 9.2 no longer has.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from scripts.fuzz_api_hooks import unique_ids
from tests.support.api_support import Shard, bearer, shard_run, tick
from tests.support.playing import NO_BACKOFF

# Seconds of requests on each store: in the slow tier, and started first.
pytestmark = pytest.mark.slow

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_acceptance,
]
BOUNDS = settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
Fuzzed = tuple[schemathesis.BaseSchema, dict[str, str]]


@pytest.fixture
def fuzzed(store_url: str) -> Iterator[Fuzzed]:
    """The served document of an app over a store with a few runs in it, and an admin's token."""
    registry = Registry()
    Shard(revert_answer={"ok": False, "error": "the shard is down"}).install(registry)
    # Which addresses a webhook may go to is the operator's setting, which no schema can say
    # (tests/application/test_webhook_addresses.py holds the default): every one, here.
    everywhere = {"webhook_allow_networks": "0.0.0.0/0, ::/0"}
    settings = Settings.model_validate({"database_url": store_url, **NO_BACKOFF, **everywhere})
    with bootstrap(settings, registry) as rl:
        for advance in ("auto", "manual"):
            rl.runs.start(shard_run(2, advance=advance), by="fuzz")
        tick(rl, 2)
        admin = bearer(rl.tokens.issue("fuzz", "admin", by="test").secret)
        yield schemathesis.openapi.from_asgi("/openapi.json", create_app(rl)), admin


def fuzz(
    operation: schemathesis.APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    admin: dict[str, str],
) -> None:
    @BOUNDS
    @given(case=operation.as_strategy(mode).filter(lambda case: unique_ids(case.body)))
    def one(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
        case.call_and_validate(headers=dict(admin), checks=CHECKS)

    one()


def test_no_request_is_a_server_error_and_every_answer_is_documented(fuzzed: Fuzzed) -> None:
    schema, admin = fuzzed
    failures = {}
    for result in schema.get_all_operations():
        # An operation the document cannot describe (an Err) fails the test here.
        operation = result.ok()  # type: ignore[union-attr]
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                fuzz(operation, mode, admin)
            except Unsatisfiable:  # nothing to make invalid: no parameters, no body
                continue
            except (Exception, BaseExceptionGroup) as failure:  # collected, then all shown
                failures[f"{mode.value} {operation.label}"] = str(failure)[:2000]
    assert not failures, "\n\n".join(f"{key}: {said}" for key, said in failures.items())

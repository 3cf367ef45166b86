"""The auth matrix, on an SQLite file and on PostgreSQL: every operation of the OpenAPI document
by (no token, a token that is not one, viewer, operator, admin). No token → 401 on every /admin
route; a role below the route's → 403; the route's role or above → neither. The table of roles is
written here, not read from the app, and must name exactly the document's operations: a new
route fails this test until someone decides who may call it.
"""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from runledger.application.api.app import routes
from tests.support.api_support import (
    ROLES,
    Api,
    api_fixture,  # noqa: F401  (a fixture)
    api_rl_fixture,  # noqa: F401  (a fixture)
    shard_fixture,  # noqa: F401  (a fixture)
    shard_run,
)

VIEWER, OPERATOR, ADMIN, OPEN = "viewer", "operator", "admin", None
RUNS = "/admin/events/runs"
DEFS = "/admin/definitions"
NEEDS: dict[tuple[str, str], str | None] = {
    ("GET", RUNS): VIEWER,
    ("POST", RUNS): OPERATOR,
    ("GET", RUNS + "/{run_id}"): VIEWER,
    ("GET", RUNS + "/{run_id}/log"): VIEWER,
    ("GET", RUNS + "/{run_id}/replay"): VIEWER,
    ("POST", RUNS + "/{run_id}/advance"): OPERATOR,
    ("POST", RUNS + "/{run_id}/cancel"): OPERATOR,
    ("POST", RUNS + "/{run_id}/abort"): OPERATOR,
    ("POST", RUNS + "/{run_id}/cleanup"): OPERATOR,
    ("POST", RUNS + "/{run_id}/keep"): OPERATOR,
    ("POST", RUNS + "/{run_id}/entries/{entry_id}/keep"): OPERATOR,
    ("POST", RUNS + "/{run_id}/entries/{entry_id}/retry"): OPERATOR,
    ("POST", "/admin/events/cleanup/plan"): VIEWER,  # a plan writes nothing
    ("POST", "/admin/events/cleanup/apply"): OPERATOR,
    ("GET", "/admin/entries"): VIEWER,
    ("GET", "/admin/entries/{entry_id}"): VIEWER,
    ("GET", "/admin/entries/{entry_id}/history"): VIEWER,
    ("GET", "/admin/modules"): VIEWER,
    ("POST", "/admin/modules/{name}/reconcile"): ADMIN,
    ("GET", "/admin/runners"): VIEWER,
    ("GET", "/admin/projections"): VIEWER,
    ("GET", "/admin/me"): VIEWER,
    ("GET", "/admin/tokens"): ADMIN,
    ("POST", "/admin/tokens"): ADMIN,
    ("GET", "/admin/tokens/{token_id}"): ADMIN,
    ("DELETE", "/admin/tokens/{token_id}"): ADMIN,
    ("GET", "/admin/webhooks"): ADMIN,
    ("POST", "/admin/webhooks"): ADMIN,
    ("GET", "/admin/webhooks/{subscription_id}"): ADMIN,
    ("PATCH", "/admin/webhooks/{subscription_id}"): ADMIN,
    ("DELETE", "/admin/webhooks/{subscription_id}"): ADMIN,
    ("GET", "/admin/webhooks/{subscription_id}/deliveries"): ADMIN,
    ("GET", DEFS): VIEWER,
    ("POST", DEFS): OPERATOR,
    ("GET", DEFS + "/{name}"): VIEWER,
    ("PUT", DEFS + "/{name}/draft"): OPERATOR,
    ("POST", DEFS + "/{name}/verify"): OPERATOR,
    ("POST", DEFS + "/{name}/publish"): OPERATOR,
    ("GET", DEFS + "/{name}/versions"): VIEWER,
    ("GET", DEFS + "/{name}/versions/{version}"): VIEWER,
    ("GET", DEFS + "/{name}/occurrences"): VIEWER,
    ("POST", DEFS + "/{name}/occurrences"): OPERATOR,
    ("GET", "/admin/occurrences"): VIEWER,
    ("GET", "/admin/occurrences/{occurrence_id}"): VIEWER,
    ("POST", "/admin/occurrences/{occurrence_id}/cancel"): OPERATOR,
    ("GET", "/healthz"): OPEN,
    ("GET", "/readyz"): OPEN,
    ("GET", "/metrics"): OPEN,
}
BODIES: dict[tuple[str, str], Any] = {
    ("POST", RUNS): shard_run(1, advance="manual"),
    ("POST", RUNS + "/{run_id}/abort"): {"reason": "the auth matrix"},
    ("POST", RUNS + "/{run_id}/keep"): {"reason": "the auth matrix"},
    ("POST", RUNS + "/{run_id}/entries/{entry_id}/keep"): {"reason": "the auth matrix"},
    ("POST", "/admin/events/cleanup/plan"): {},
    ("POST", "/admin/events/cleanup/apply"): {"where": {}, "fingerprint": "0" * 32},
    ("POST", "/admin/tokens"): {"name": "bob", "role": "viewer"},
    ("POST", "/admin/webhooks"): {"url": "https://example.com/hook", "events": ["run.aborted"]},
    ("PATCH", "/admin/webhooks/{subscription_id}"): {"enabled": False},
    ("POST", DEFS): {"name": "auth-matrix", "spec": shard_run(1)},
    ("PUT", DEFS + "/{name}/draft"): {"spec": shard_run(1)},
    ("POST", DEFS + "/{name}/occurrences"): {"at": "2030-01-01T00:00:00Z"},
}
"""A minimal valid body for each operation whose body is required."""


def operations() -> dict[tuple[str, str], dict[str, Any]]:
    paths = routes().openapi()["paths"]
    return {(m.upper(), p): op for p, ops in paths.items() for m, op in ops.items()}


def filled(path: str) -> str:
    return re.sub(r"\{[^}]+\}", lambda _: str(uuid4()), path)


def call(api: Api, method: str, path: str, headers: dict[str, str]) -> int:
    body = BODIES.get((method, path))
    kwargs: dict[str, Any] = {} if body is None else {"json": body}
    answer = api.client.request(method, filled(path), headers=headers, **kwargs)
    status: int = answer.status_code
    return status


def expected(needs: str | None, caller: str | None) -> str:
    if needs is None:
        return "allowed"
    if caller is None:
        return "401"
    return "allowed" if ROLES.index(caller) >= ROLES.index(needs) else "403"


def seen(status: int) -> str:
    return str(status) if status in (401, 403) else "allowed"


def test_the_table_names_every_operation_of_the_document_and_no_other() -> None:
    assert set(operations()) == set(NEEDS)


def test_every_required_body_has_a_minimal_valid_one_here() -> None:
    required = {
        key for key, op in operations().items() if op.get("requestBody", {}).get("required")
    }
    assert required == set(BODIES)


def test_every_admin_operation_documents_401_and_403() -> None:
    for (method, path), op in operations().items():
        if NEEDS[(method, path)] is not None:
            assert {"401", "403"} <= set(op["responses"]), (method, path)


def test_every_operation_for_every_caller(api: Api) -> None:
    callers: dict[str | None, dict[str, str]] = {None: {}}
    callers |= {role: api.headers(role) for role in ROLES}
    wrong = {}
    for method, path in sorted(NEEDS):
        for caller, headers in callers.items():
            status = call(api, method, path, headers)
            want = expected(NEEDS[(method, path)], caller)
            assert status < 500, (method, path, caller, status)
            if seen(status) != want:
                wrong[(method, path, caller)] = (status, want)
    assert wrong == {}


def test_a_token_that_is_not_one_is_401_everywhere(api: Api) -> None:
    forged = [
        {"Authorization": "Bearer rl_not-a-token-anyone-issued"},
        {"Authorization": "Bearer " + api.secrets["admin"][:-1]},
        {"Authorization": "Basic " + api.secrets["admin"]},
        {"Authorization": "Bearer rl_" + "x" * 5_000},
    ]
    wrong = {}
    api.rl.brake.per_minute = 1_000_000  # guessing on purpose: the brake is test_brake.py's
    for method, path in sorted(k for k, needs in NEEDS.items() if needs is not None):
        for headers in forged:
            status = call(api, method, path, headers)
            if status != 401:
                wrong[(method, path, headers["Authorization"][:30])] = status
    assert wrong == {}

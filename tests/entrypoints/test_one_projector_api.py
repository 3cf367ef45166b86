"""A request on PostgreSQL whose process is not the projector waits for it, bounded by
RUNLEDGER_PROJECTION_WAIT_S: past it, the store's trouble (503 with Retry-After), not a stale
answer and not a 500."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import psycopg
import pytest
from fastapi.testclient import TestClient

from runledger.application.asgi import create_app
from runledger.application.bootstrap import bootstrap
from runledger.application.modules.protocol import Registry
from runledger.application.settings import Settings
from runledger.domain.resource import Resource
from runledger.projections.role import ROLE_LOCK

pytestmark = pytest.mark.postgres
AT = datetime(2026, 12, 3, tzinfo=UTC)


def test_a_request_past_its_wait_for_a_hung_projector_is_a_503(pg_url: str, pg_admin: str) -> None:
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_admin, autocommit=True) as hung:
        # A projector that holds the role and does nothing: a process paused, or hung.
        hung.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [ROLE_LOCK, schema])
        settings = Settings(database_url=pg_url, projection_wait_s=0.3)
        with bootstrap(settings, Registry()) as rl:
            rl.app.save(
                Resource(
                    run_id=uuid.uuid4(),
                    step="spawn",
                    kind="creature",
                    ref="c1",
                    module="game",
                    action=None,
                    idempotency_key="k",
                    payload=None,
                    member_key=None,
                    until=None,
                    at=AT,
                )
            )
            client = TestClient(create_app(rl), raise_server_exceptions=False)
            answer = client.get(
                "/admin/events/runs", headers={"Authorization": "Bearer rl_not_a_token"}
            )
    assert answer.status_code == 503, answer.text
    assert "did not reach position" in answer.json()["detail"]
    assert answer.headers["Retry-After"]
